// isb_docs: docs/tools.md from the tool registry and docs/cli.md from the CLI's flags (`make docs`).
//   isb_docs DIR          writes DIR/tools.md and DIR/cli.md
//   isb_docs tools|cli    prints one page on stdout
#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>
#include <string>

#include "cli/app.h"
#include "docs/cli_docs.h"
#include "docs/docs_registry.h"
#include "docs/tool_docs.h"

namespace {

int Usage() {
  std::fprintf(stderr, "usage: isb_docs DIR | isb_docs tools | isb_docs cli\n");
  return 2;
}

isb::Result<std::string> ToolsPage() {
  ISB_ASSIGN_OR_RETURN(auto docs, isb::docs::DocsRegistry::Open());
  return isb::docs::ToolsMarkdown(docs->registry()) + "\n";
}

std::string CliPage() {
  CLI::App app{isb::cli::kAppDescription, "isb"};
  int exit_code = 0;
  isb::cli::BuildApp(app, &exit_code);
  return isb::docs::CliMarkdown(app, "isb") + "\n";
}

bool Write(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) std::fprintf(stderr, "isb_docs: cannot write %s\n", path.c_str());
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return Usage();
  const std::string arg = argv[1];
  if (arg == "cli") {
    std::fputs(CliPage().c_str(), stdout);
    return 0;
  }
  auto tools = ToolsPage();
  if (!tools.ok()) {
    std::fprintf(stderr, "isb_docs: the tool registry: %s\n", tools.error().message.c_str());
    return 1;
  }
  if (arg == "tools") {
    std::fputs(tools->c_str(), stdout);
    return 0;
  }
  if (arg.empty() || arg[0] == '-') return Usage();
  return Write(arg + "/tools.md", *tools) && Write(arg + "/cli.md", CliPage()) ? 0 : 1;
}
