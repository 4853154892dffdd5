// What the reference pages share: a table cell's escaping and a page's end.
#pragma once

#include <string>
#include <string_view>

namespace isb::docs {

// A table cell: one line, and a `|` that does not end the cell.
inline std::string Cell(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\n' || c == '\r') {
      out += ' ';
    } else if (c == '|') {
      out += "\\|";
    } else {
      out += c;
    }
  }
  return out;
}

// Drops the blank lines a page's last section leaves, keeping its final newline.
inline void EndPage(std::string& page) {
  while (page.size() >= 2 && page[page.size() - 1] == '\n' && page[page.size() - 2] == '\n') page.pop_back();
}

}  // namespace isb::docs
