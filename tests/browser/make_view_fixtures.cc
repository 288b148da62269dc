// Writes the viewer's browser-test files (view_fixtures.h) into a folder.
#include <cstdio>
#include <string>

#include "tests/unit/tools/server/view_fixtures.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT_DIR\n", argv[0]);
    return 2;
  }
  const deepcontext::Status written =
      deepcontext::server::testing::WriteViewFixtures(argv[1]);
  if (!written.ok()) std::fprintf(stderr, "%s\n", written.message().c_str());
  return written.ok() ? 0 : 1;
}
