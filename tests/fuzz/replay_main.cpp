// The regression test of a fuzz harness in every build: runs LLVMFuzzerTestOneInput once on each file named on the
// command line and on each file in each directory named (sorted; names starting with '.' and README files are
// skipped; a directory that does not exist counts as empty). A finding aborts inside the harness, so the test fails
// naming the input it was replaying. The libFuzzer binaries of a -DETRT_BUILD_FUZZERS=ON build do the same when
// given files instead of a corpus directory.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

bool skipped(const fs::path& path) {
  const std::string name = path.filename().string();
  return name.empty() || name[0] == '.' || name.rfind("README", 0) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    const fs::path arg(argv[i]);
    std::error_code ec;
    if (fs::is_directory(arg, ec)) {
      std::vector<fs::path> in_dir;
      for (const fs::directory_entry& entry : fs::directory_iterator(arg))
        if (entry.is_regular_file() && !skipped(entry.path())) in_dir.push_back(entry.path());
      std::sort(in_dir.begin(), in_dir.end());
      files.insert(files.end(), in_dir.begin(), in_dir.end());
    } else if (fs::exists(arg, ec)) {
      files.push_back(arg);
    } else {
      std::printf("replay: %s does not exist; nothing to replay there\n", argv[i]);
    }
  }
  for (const fs::path& file : files) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "replay: cannot read %s\n", file.c_str());
      return 1;
    }
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::fprintf(stderr, "replay: %s (%zu bytes)\n", file.c_str(), bytes.size());
    // An exactly sized heap copy, as libFuzzer gives: any read past the end is an ASan report.
    const std::unique_ptr<uint8_t[]> copy(new uint8_t[bytes.empty() ? 1 : bytes.size()]);
    std::copy(bytes.begin(), bytes.end(), copy.get());
    LLVMFuzzerTestOneInput(copy.get(), bytes.size());
  }
  std::printf("replay: %zu inputs, no finding\n", files.size());
  return 0;
}
