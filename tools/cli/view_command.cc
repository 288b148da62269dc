#include "tools/cli/view_command.h"

#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <thread>

#include "tools/server/view_server.h"

extern char** environ;

namespace deepcontext::cli {

namespace {

constexpr const char* kPrefix = "deepcontext view: ";

// Starts the desktop's browser on url when there is a desktop; the URL has
// already been printed, so failing here costs nothing.
void OpenBrowser(const std::string& url) {
  if (std::getenv("DISPLAY") == nullptr &&
      std::getenv("WAYLAND_DISPLAY") == nullptr) {
    return;
  }
  // posix_spawnp with an argument vector: the URL never meets a shell.
  std::string program = "xdg-open";
  char* argv[] = {program.data(), const_cast<char*>(url.c_str()), nullptr};
  pid_t pid = 0;
  if (posix_spawnp(&pid, program.c_str(), nullptr, nullptr, argv, environ) ==
      0) {
    // xdg-open returns once the browser is started; reap it off this thread.
    std::thread([pid] { waitpid(pid, nullptr, 0); }).detach();
  }
}

// Reports profiles that fail to load as each one settles, so a typo in a
// file name shows on the terminal as well as in the page.
void ReportLoadErrors(const server::ProfileStore& store, std::ostream& err) {
  for (size_t id = 0; id < store.size(); ++id) {
    server::LoadResult result = store.Get(id);
    if (!result.ok()) err << kPrefix << result.error().message << "\n";
  }
  err.flush();
}

}  // namespace

int RunView(const ViewRequest& request, std::ostream& out, std::ostream& err) {
  // Blocked before any thread starts so that every thread inherits the
  // mask and only the waiter below ever receives Ctrl-C.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  auto bound = server::ViewServer::Bind(request.files, request.port);
  if (!bound.ok()) {
    err << kPrefix << bound.error().message << "\n";
    return kViewCannotServe;
  }
  server::ViewServer& view = *bound.value();
  out << "DeepContext viewer: " << view.url() << "\n"
      << "Press Ctrl-C to stop.\n";
  out.flush();
  if (request.open_browser) OpenBrowser(view.url());

  std::thread load_reporter(
      [&view, &err] { ReportLoadErrors(view.store(), err); });
  std::thread signal_waiter([&view, &stop_signals] {
    int signal = 0;
    sigwait(&stop_signals, &signal);
    view.Stop();
  });
  bool served = view.Run();
  if (!served) {
    // Run() failed on its own: wake the waiter so it can be joined.
    pthread_kill(signal_waiter.native_handle(), SIGTERM);
  }
  signal_waiter.join();
  load_reporter.join();
  if (!served) {
    err << kPrefix << "the server stopped unexpectedly\n";
    return kViewCannotServe;
  }
  out << "Stopped.\n";
  return kViewOk;
}

void AddViewCommand(CLI::App& app, std::function<int()>& action) {
  auto request = std::make_shared<ViewRequest>();
  CLI::App* command = app.add_subcommand(
      "view", "Open profiles in the browser viewer (local server)");
  command->add_option("files", request->files, ".dctx profile files")
      ->required();
  command
      ->add_option("--port", request->port,
                   "Port on 127.0.0.1 (default: any free port)")
      ->check(CLI::Range(0, 65535));
  auto no_browser = std::make_shared<bool>(false);
  command->add_flag("--no-browser", *no_browser,
                    "Only print the URL; do not start a browser");
  command->callback([request, no_browser, &action] {
    request->open_browser = !*no_browser;
    action = [request] { return RunView(*request, std::cout, std::cerr); };
  });
}

}  // namespace deepcontext::cli
