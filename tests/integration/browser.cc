#include "tests/integration/browser.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

namespace hyperfed::testing {

namespace {

constexpr absl::Duration kCallTimeout = absl::Seconds(30);

}  // namespace

std::string Browser::Find() {
  const char* path = std::getenv("PATH");
  for (const std::string name : {"chromium", "chromium-browser"}) {
    for (absl::string_view dir : absl::StrSplit(path ? path : "/usr/bin", ':')) {
      const std::string p = absl::StrCat(dir, "/", name);
      if (access(p.c_str(), X_OK) == 0) return p;
    }
  }
  return "";
}

absl::StatusOr<std::unique_ptr<Browser>> Browser::Start(const std::string& work_dir, int width, int height) {
  const std::string bin = Find();
  if (bin.empty()) return absl::NotFoundError("no chromium in PATH");
  signal(SIGPIPE, SIG_IGN);  // a browser that died must not take the test with it
  int to[2], from[2];
  if (pipe2(to, O_CLOEXEC) != 0 || pipe2(from, O_CLOEXEC) != 0) return absl::InternalError("pipe failed");
  const std::string log = work_dir + "/chromium.log";
  std::vector<std::string> args = {bin,
                                   "--headless",
                                   "--no-sandbox",  // tests run as root, where the sandbox refuses to start
                                   "--disable-gpu",
                                   "--remote-debugging-pipe",
                                   "--user-data-dir=" + work_dir + "/chromium-profile",
                                   absl::StrCat("--window-size=", width, ",", height),
                                   "--hide-scrollbars",
                                   "--no-first-run",
                                   "--no-default-browser-check",
                                   "--disable-extensions",
                                   "--disable-background-networking",
                                   "--disable-sync",
                                   "about:blank"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError("fork failed");
  if (pid == 0) {
    setpgid(0, 0);
    // The protocol's pipe ends at fds 3 and 4 (dup2 clears O_CLOEXEC).
    const int in = dup(to[0]), out = dup(from[1]);
    dup2(in, 3);
    dup2(out, 4);
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    execv(argv[0], argv.data());
    _exit(127);
  }
  setpgid(pid, pid);
  close(to[0]);
  close(from[1]);
  std::unique_ptr<Browser> b(new Browser);
  b->pid_ = pid;
  b->to_ = to[1];
  b->from_ = from[0];
  auto targets = b->Call("Target.getTargets", nlohmann::json::object(), false);
  if (!targets.ok())
    return absl::UnavailableError(absl::StrCat("chromium did not answer (", targets.status().message(), "); see ", log));
  std::string target;
  for (const auto& t : (*targets)["targetInfos"])
    if (t.value("type", "") == "page") target = t.value("targetId", "");
  if (target.empty()) return absl::InternalError("chromium opened no page");
  auto attached = b->Call("Target.attachToTarget", {{"targetId", target}, {"flatten", true}}, false);
  if (!attached.ok()) return attached.status();
  b->session_ = (*attached).value("sessionId", "");
  auto st = b->Call("Emulation.setDeviceMetricsOverride",
                    {{"width", width}, {"height", height}, {"deviceScaleFactor", 1}, {"mobile", false}});
  if (!st.ok()) return st.status();
  return b;
}

Browser::~Browser() {
  if (to_ >= 0) close(to_);
  if (from_ >= 0) close(from_);
  if (pid_ <= 0) return;
  // Chromium's own children (renderer, zygote) share its process group.
  kill(-pid_, SIGTERM);
  for (int i = 0; i < 50; ++i) {
    if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
      kill(-pid_, SIGKILL);  // any child left behind
      return;
    }
    usleep(100 * 1000);
  }
  kill(-pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
}

absl::StatusOr<nlohmann::json> Browser::Call(const std::string& method, nlohmann::json params, bool in_page) {
  const int id = next_id_++;
  nlohmann::json msg = {{"id", id}, {"method", method}, {"params", std::move(params)}};
  if (in_page) msg["sessionId"] = session_;
  std::string out = msg.dump();
  out.push_back('\0');
  for (size_t done = 0; done < out.size();) {
    const ssize_t n = write(to_, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return absl::UnavailableError("chromium's pipe is closed");
    done += static_cast<size_t>(n);
  }
  const absl::Time deadline = absl::Now() + kCallTimeout;
  while (true) {
    // Whole messages already read: answers to other calls and events are
    // dropped (no test here listens for events).
    for (size_t end; (end = buffer_.find('\0')) != std::string::npos;) {
      nlohmann::json reply = nlohmann::json::parse(buffer_.substr(0, end), nullptr, false);
      buffer_.erase(0, end + 1);
      if (reply.is_discarded() || !reply.contains("id") || reply["id"] != id) continue;
      if (reply.contains("error"))
        return absl::InternalError(absl::StrCat(method, ": ", reply["error"].value("message", reply["error"].dump())));
      return reply.value("result", nlohmann::json::object());
    }
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) return absl::DeadlineExceededError(absl::StrCat(method, ": no answer"));
    pollfd p{from_, POLLIN, 0};
    const int r = poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    char buf[65536];
    const ssize_t n = read(from_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return absl::UnavailableError(absl::StrCat(method, ": chromium closed its pipe"));
    buffer_.append(buf, static_cast<size_t>(n));
  }
}

absl::Status Browser::Navigate(const std::string& url) {
  auto r = Call("Page.navigate", {{"url", url}});
  if (!r.ok()) return r.status();
  if (r->contains("errorText")) return absl::UnavailableError(absl::StrCat(url, ": ", (*r)["errorText"].dump()));
  return WaitFor("document.readyState === 'complete'", absl::Seconds(20)).status();
}

absl::StatusOr<nlohmann::json> Browser::Eval(const std::string& expression) {
  auto r = Call("Runtime.evaluate", {{"expression", expression}, {"returnByValue", true}, {"awaitPromise", true}});
  if (!r.ok()) return r.status();
  if (r->contains("exceptionDetails"))
    return absl::InvalidArgumentError(absl::StrCat(expression, ": ", (*r)["exceptionDetails"].dump()));
  return (*r)["result"].value("value", nlohmann::json());
}

absl::StatusOr<absl::Duration> Browser::WaitFor(const std::string& expression, absl::Duration timeout) {
  const absl::Time start = absl::Now();
  while (true) {
    auto v = Eval(expression);
    if (!v.ok()) return v.status();
    if (v->is_boolean() && v->get<bool>()) return absl::Now() - start;
    if (absl::Now() - start > timeout)
      return absl::DeadlineExceededError(absl::StrCat("not true within ", absl::FormatDuration(timeout), ": ",
                                                      expression));
    absl::SleepFor(absl::Milliseconds(100));
  }
}

absl::Status Browser::Screenshot(const std::string& path) {
  auto r = Call("Page.captureScreenshot", {{"format", "png"}, {"captureBeyondViewport", true}});
  if (!r.ok()) return r.status();
  std::string png;
  if (!absl::Base64Unescape(r->value("data", ""), &png)) return absl::InternalError("screenshot: not base64");
  std::ofstream f(path, std::ios::binary);
  f << png;
  return f.good() ? absl::OkStatus() : absl::InternalError("cannot write " + path);
}

}  // namespace hyperfed::testing
