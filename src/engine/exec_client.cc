// Exec sessions, client side.
#include "engine/exec_client.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "base/fd.h"
#include "base/fd_passing.h"
#include "base/unix_address.h"
#include "engine/contain.h"
#include "engine/exec_protocol.h"

namespace isb::engine {
namespace {

using Clock = std::chrono::steady_clock;

Result<Fd> Connect(const std::string& path) {
  ISB_ASSIGN_OR_RETURN(sockaddr_un addr, UnixAddress(path));
  Fd fd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Error::Sys("socket");
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    if (errno == ECONNREFUSED || errno == ENOENT)
      return Error::Of(Code::kNotFound, "the sandbox is not running (its init does not answer)");
    return Error::Sys("connect " + path);
  }
  return fd;
}

}  // namespace

Result<std::string> EncodeExecRequest(const ExecSpec& spec) {
  if (spec.argv.empty() || spec.argv[0].empty())
    return Error::Of(Code::kInvalidArgument, "argv[0]: must name a command");
  std::string strings;
  auto add = [&](const std::string& s) -> Status {
    if (s.find('\0') != std::string::npos)
      return Error::Of(Code::kInvalidArgument, "argv, env and workdir must not contain NUL bytes");
    strings.append(s).push_back('\0');
    return {};
  };
  for (const auto& a : spec.argv) ISB_TRY(add(a));
  for (const auto& e : spec.env) ISB_TRY(add(e));
  ISB_TRY(add(spec.workdir.empty() ? "/" : spec.workdir));
  ExecRequestHeader h{spec.tty ? kExecMagicTty : kExecMagic,
                      spec.uid,
                      spec.gid,
                      static_cast<uint32_t>(spec.argv.size()),
                      static_cast<uint32_t>(spec.env.size()),
                      static_cast<uint32_t>(strings.size())};
  if (sizeof h + sizeof(ExecTtySize) + strings.size() > kExecMaxMessage || spec.argv.size() > 4000 ||
      spec.env.size() > 4000)
    return Error::Of(Code::kTooLarge, "argv and env together exceed 256 KiB or 4000 entries");
  if (spec.tty && (spec.rows == 0 || spec.cols == 0))
    return Error::Of(Code::kInvalidArgument, "a terminal needs at least 1 row and 1 column");
  std::string msg(reinterpret_cast<const char*>(&h), sizeof h);
  if (spec.tty) {
    ExecTtySize size{spec.rows, spec.cols};
    msg.append(reinterpret_cast<const char*>(&size), sizeof size);
  }
  return msg + strings;
}

namespace {

// Receives one event; a descriptor riding along (a terminal's master) lands in *fd, any further ones are closed.
ssize_t ReceiveEvent(int sock, ExecEvent* e, Fd* fd) {
  int received = -1;
  ssize_t got = RecvWithFd(sock, e, sizeof *e, &received, MSG_DONTWAIT);
  if (received >= 0) {
    if (!fd->valid())
      fd->Reset(received);
    else
      ::close(received);
  }
  return got;
}

Status SendRequest(int sock, const std::string& msg, const int (&fds)[3]) {
  // A terminal request sends none: init makes the descriptors.
  if (SendWithFds(sock, msg.data(), msg.size(), fds, fds[0] < 0 ? 0 : 3) != static_cast<ssize_t>(msg.size()))
    return Error::Sys("send exec request");
  return {};
}

struct Output {
  Fd fd;
  std::string* data;
  bool* truncated;
  int stream;
};

// `stream_all`: the sink sees every byte, the outcome keeps the first `limit`.
void Pump(Output& o, uint64_t limit, bool stream_all, const ExecSink& sink) {
  char buf[65536];
  ssize_t n = ::read(o.fd.get(), buf, sizeof buf);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n <= 0) {
    o.fd.Reset();
    return;
  }
  size_t room = o.data->size() < limit ? static_cast<size_t>(limit - o.data->size()) : 0;
  size_t keep = std::min(room, static_cast<size_t>(n));
  if (keep < static_cast<size_t>(n)) *o.truncated = true;
  o.data->append(buf, keep);
  size_t show = stream_all ? static_cast<size_t>(n) : keep;
  if (sink && show > 0) sink(o.stream, std::string_view(buf, show));
}

}  // namespace

Result<ExecOutcome> ExecInSandbox(const std::string& control_path, const ExecSpec& spec, const ExecSink& sink) {
  ISB_ASSIGN_OR_RETURN(std::string msg, EncodeExecRequest(spec));
  ISB_ASSIGN_OR_RETURN(Fd sock, Connect(control_path));
  Pipe in, out, err;  // a terminal session fills them with its master once it starts
  if (!spec.tty) {
    ISB_ASSIGN_OR_RETURN(in, MakePipe());
    ISB_ASSIGN_OR_RETURN(out, MakePipe());
    ISB_ASSIGN_OR_RETURN(err, MakePipe());
  }
  const auto start = Clock::now();
  ISB_TRY(SendRequest(sock.get(), msg, {in.read.get(), out.write.get(), err.write.get()}));
  in.read.Reset();
  out.write.Reset();
  err.write.Reset();
  for (int fd : {in.write.get(), out.read.get(), err.read.get()})
    if (fd >= 0) ::fcntl(fd, F_SETFL, O_NONBLOCK);
  if (spec.stdin_data.empty()) in.write.Reset();

  ExecOutcome r;
  Output outs[2] = {{std::move(out.read), &r.stdout_data, &r.stdout_truncated, 1},
                    {std::move(err.read), &r.stderr_data, &r.stderr_truncated, 2}};
  size_t stdin_off = 0;
  bool exited = false;
  int status = 0;
  const auto deadline = start + spec.timeout;
  Clock::time_point drain_until = Clock::time_point::max();
  // Asked about once a second (an ask may write to the client, a keep-alive): not after every read of output.
  Clock::time_point next_ask = start + std::chrono::seconds(1);
  while (true) {
    // After the command exits, output still in the pipes is read; descendants that keep them open are not
    // waited for beyond a short grace period.
    bool outputs_open = outs[0].fd.valid() || outs[1].fd.valid();
    if (exited && (!outputs_open || Clock::now() >= drain_until)) break;
    if (!exited && !sock.valid()) break;
    pollfd fds[4] = {{outs[0].fd.get(), POLLIN, 0},
                     {outs[1].fd.get(), POLLIN, 0},
                     {exited ? -1 : sock.get(), POLLIN, 0},
                     {in.write.get(), POLLOUT, 0}};
    auto until = exited ? drain_until : deadline;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
    const int64_t tick = spec.cancelled && !exited ? 1000 : int64_t{1} << 30;
    int n = ::poll(fds, 4, static_cast<int>(std::clamp<int64_t>(left, 0, tick)));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::Sys("poll");
    if (!exited && spec.cancelled && Clock::now() >= next_ask) {
      next_ask = Clock::now() + std::chrono::seconds(1);
      if (spec.cancelled()) {
        sock.Reset();  // init kills the command's process group
        return Error::Of(Code::kUnavailable, "the caller went away or cancelled the call; the command was killed");
      }
    }
    if (!exited && Clock::now() >= deadline) {  // checked on every pass: a command that never stops writing too
      // Closing the session makes init kill the command's process group.
      r.timed_out = true;
      sock.Reset();
      exited = true;
      drain_until = Clock::now() + std::chrono::milliseconds(200);
      continue;
    }
    for (int i = 0; i < 2; ++i)
      if (fds[i].revents) Pump(outs[i], spec.output_limit, spec.tty || spec.sink_all, sink);
    if (fds[3].revents) {
      ssize_t w = ::write(in.write.get(), spec.stdin_data.data() + stdin_off, spec.stdin_data.size() - stdin_off);
      if (w > 0) stdin_off += static_cast<size_t>(w);
      if (w < 0 && errno != EAGAIN && errno != EINTR) in.write.Reset();  // the command closed its stdin
      if (stdin_off == spec.stdin_data.size()) in.write.Reset();
    }
    if (fds[2].revents) {
      ExecEvent e{};
      Fd passed;
      ssize_t got = ReceiveEvent(sock.get(), &e, &passed);
      if (got == static_cast<ssize_t>(sizeof e) && !DecodeExecEvent(&e, sizeof e, &e))
        return Error::Of(Code::kUnavailable, "the sandbox's init sent an event of an unknown kind");
      if (got == static_cast<ssize_t>(sizeof e)) {
        if (e.kind == ExecEventKind::kStarted && spec.tty) {
          ISB_ASSIGN_OR_RETURN(Fd master, ExecTerminal::AdoptMaster(std::move(passed)));
          // The loop reads and writes copies; the terminal object owns the master for other threads.
          Fd reader(::fcntl(master.get(), F_DUPFD_CLOEXEC, 3));
          if (!reader.valid()) return Error::Sys("dup terminal");
          if (!spec.stdin_data.empty()) {
            in.write.Reset(::fcntl(master.get(), F_DUPFD_CLOEXEC, 3));
            if (!in.write.valid()) return Error::Sys("dup terminal");
          }
          outs[0].fd = std::move(reader);
          auto terminal = std::make_shared<ExecTerminal>(std::move(master));
          if (spec.on_terminal) spec.on_terminal(std::move(terminal));
        } else if (e.kind == ExecEventKind::kFailed) {
          if (e.detail == 0)
            return Error::Of(Code::kUnavailable,
                             std::string("the sandbox refused the exec: ") + std::strerror(e.value));
          if (static_cast<Step>(e.detail) == Step::kExec) {
            r.exec_error = spec.argv[0] + ": " +
                           (e.value == ENOENT ? std::string("command not found in the sandbox")
                                              : std::string(std::strerror(e.value)));
          } else {
            r.exec_error = std::string(StepName(static_cast<Step>(e.detail))) + ": " + std::strerror(e.value);
          }
        } else if (e.kind == ExecEventKind::kExited) {
          status = e.value;
          exited = true;
          drain_until = Clock::now() + std::chrono::milliseconds(100);
        }
      } else if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) {
        return Error::Of(Code::kUnavailable, "the sandbox stopped during the exec");
      }
    }
  }
  r.duration_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  if (r.timed_out) {
    r.signal = SIGKILL;
    r.exit_code = 124;
  } else if (WIFSIGNALED(status)) {
    r.signal = WTERMSIG(status);
    r.exit_code = 128 + r.signal;
  } else {
    r.exit_code = WEXITSTATUS(status);
  }
  return r;
}

}  // namespace isb::engine
