#include "format/dctx_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>
#include <thread>
#include <vector>

#include "format/dctx_container.h"
#include "format/payload_codec.h"
#include "tests/unit/format/format_test_util.h"

namespace deepcontext::format {
namespace {

// A failed read must carry exactly one line naming its source, and no
// profile.
void ExpectCleanFailure(const StatusOr<Profile>& result,
                        const std::string& source) {
  ASSERT_FALSE(result.ok());
  const std::string& error = result.status().message();
  EXPECT_EQ(error.rfind(source + ": ", 0), 0u) << error;
  EXPECT_GT(error.size(), source.size() + 2);
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
}

TEST(DctxFile, RoundTripsInMemory) {
  const Profile expected = MakeSampleProfile(3000);
  const std::string bytes = Encode(expected);
  ASSERT_FALSE(bytes.empty());
  const StatusOr<Profile> result = DecodeProfile(bytes, "memory");
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_TRUE(result.status().ok());
  ExpectSameProfile(expected, *result);
  EXPECT_EQ(result->Metadata("rank"), "3");
  EXPECT_EQ(result->strings[3], "训练循环");
}

TEST(DctxFile, RoundTripsTheDefaultProfile) {
  const StatusOr<Profile> result = DecodeProfile(Encode(Profile{}), "empty");
  ASSERT_TRUE(result.ok()) << result.status().message();
  ExpectSameProfile(Profile{}, *result);
}

TEST(DctxFile, EncodingIsDeterministicAndCompressed) {
  const Profile profile = MakeSampleProfile(20000);
  const std::string bytes = Encode(profile);
  EXPECT_EQ(bytes, Encode(profile));
  EXPECT_LT(bytes.size(), EncodePayload(profile).size());
}

TEST(DctxFile, RoundTripsThroughAFile) {
  ScratchDir dir;
  const std::string path = dir.path() + "/prof.dctx";
  const Profile expected = MakeSampleProfile(5000);
  ASSERT_TRUE(WriteProfileFile(expected, path).ok());
  EXPECT_EQ(dir.List(), std::vector<std::string>{"prof.dctx"});
  EXPECT_EQ(ReadBytes(path), Encode(expected));
  const StatusOr<Profile> result = ReadProfileFile(path);
  ASSERT_TRUE(result.ok()) << result.status().message();
  ExpectSameProfile(expected, *result);
}

TEST(DctxFile, RoundTripsALargeProfile) {
  const Profile expected = MakeSampleProfile(200000);
  const StatusOr<Profile> result = DecodeProfile(Encode(expected), "large");
  ASSERT_TRUE(result.ok()) << result.status().message();
  ExpectSameProfile(expected, *result);
}

TEST(DctxFile, MissingFile) {
  ScratchDir dir;
  const std::string path = dir.path() + "/absent.dctx";
  const StatusOr<Profile> result = ReadProfileFile(path);
  ExpectCleanFailure(result, path);
  EXPECT_EQ(result.status().message(),
            path + ": cannot open: No such file or directory");
}

TEST(DctxFile, EmptyFile) {
  ScratchDir dir;
  const std::string path = dir.path() + "/empty.dctx";
  WriteBytes(path, "");
  const StatusOr<Profile> result = ReadProfileFile(path);
  ExpectCleanFailure(result, path);
  EXPECT_EQ(result.status().message(), path + ": empty file");
}

TEST(DctxFile, ForeignFiles) {
  ScratchDir dir;
  const std::string text = dir.path() + "/notes.txt";
  WriteBytes(text, "This is a text file,\nnot a profile.\n");
  StatusOr<Profile> result = ReadProfileFile(text);
  ExpectCleanFailure(result, text);
  EXPECT_EQ(result.status().message(),
            text + ": not a DeepContext profile (bad magic)");

  const std::string png = dir.path() + "/image.png";
  WriteBytes(png, std::string("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16) +
                      std::string(100, '\0'));
  result = ReadProfileFile(png);
  ExpectCleanFailure(result, png);
  EXPECT_EQ(result.status().message(),
            png + ": not a DeepContext profile (bad magic)");
}

TEST(DctxFile, DirectoryIsNotReadable) {
  ScratchDir dir;
  const StatusOr<Profile> result = ReadProfileFile(dir.path());
  ExpectCleanFailure(result, dir.path());
  EXPECT_EQ(result.status().message(),
            dir.path() + ": is a directory, not a profile file");
}

// Devices and pipes have no size to bound the read by: /dev/zero would be
// read until memory runs out, and a FIFO without a writer would block.
TEST(DctxFile, OnlyRegularFilesAreRead) {
  StatusOr<Profile> result = ReadProfileFile("/dev/zero");
  ExpectCleanFailure(result, "/dev/zero");
  EXPECT_EQ(result.status().message(), "/dev/zero: not a regular file");
  ScratchDir dir;
  const std::string fifo = dir.path() + "/pipe.dctx";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  result = ReadProfileFile(fifo);
  ExpectCleanFailure(result, fifo);
  EXPECT_EQ(result.status().message(), fifo + ": not a regular file");
}

// A few KB of file that decompress to millions of empty strings are refused
// with the memory they would need, not after allocating it.
TEST(DctxFile, HighlyCompressedEmptyStringsAreRejected) {
  constexpr size_t kCount = 4'000'000;
  Profile profile = MakeSampleProfile(5);
  profile.strings.resize(kCount);
  const std::string file = Encode(profile);
  ASSERT_LT(file.size(), 16'000u);
  const StatusOr<Profile> result = DecodeProfile(file, "bomb.dctx");
  ExpectCleanFailure(result, "bomb.dctx");
  EXPECT_NE(result.status().message().find(
                "strings section: 4000000 records would take "
                "128000000 bytes of memory"),
            std::string::npos)
      << result.status().message();
}

TEST(DctxFile, TextModeTransferIsDetected) {
  const std::string bytes = Encode(MakeSampleProfile(10));
  std::string converted;
  for (char c : bytes) {
    if (c == '\n') converted += '\r';
    converted += c;
  }
  const StatusOr<Profile> result = DecodeProfile(converted, "x.dctx");
  ExpectCleanFailure(result, "x.dctx");
  EXPECT_NE(result.status().message().find("bad magic"), std::string::npos);
}

TEST(DctxFile, EveryTruncationIsRejected) {
  const std::string bytes = Encode(MakeSampleProfile(300));
  const size_t payload = bytes.size() - kHeaderSize;
  for (size_t len = 0; len < bytes.size(); ++len) {
    const StatusOr<Profile> result =
        DecodeProfile(bytes.substr(0, len), "t.dctx");
    ExpectCleanFailure(result, "t.dctx");
    std::string expected;
    if (len == 0) {
      expected = "t.dctx: empty file";
    } else if (len < kHeaderSize) {
      expected =
          "t.dctx: truncated file (expected at least 40 bytes of "
          "header, found " +
          std::to_string(len) + ")";
    } else {
      expected = "t.dctx: truncated file (expected " + std::to_string(payload) +
                 " bytes of payload, found " +
                 std::to_string(len - kHeaderSize) + ")";
    }
    ASSERT_EQ(result.status().message(), expected) << "length " << len;
  }
}

TEST(DctxFile, TruncatedFileOnDisk) {
  ScratchDir dir;
  const std::string path = dir.path() + "/cut.dctx";
  const std::string bytes = Encode(MakeSampleProfile(300));
  WriteBytes(path, bytes.substr(0, 140));
  const StatusOr<Profile> result = ReadProfileFile(path);
  ExpectCleanFailure(result, path);
  EXPECT_EQ(result.status().message(),
            path + ": truncated file (expected " +
                std::to_string(bytes.size() - kHeaderSize) +
                " bytes of payload, found 100)");
}

TEST(DctxFile, EverySingleByteCorruptionIsRejected) {
  const std::string bytes = Encode(MakeSampleProfile(200));
  for (size_t pos = 0; pos < bytes.size(); ++pos) {
    for (int flip : {0x01, 0x80, 0xff}) {
      std::string corrupt = bytes;
      corrupt[pos] = static_cast<char>(corrupt[pos] ^ flip);
      const StatusOr<Profile> result = DecodeProfile(corrupt, "c.dctx");
      ExpectCleanFailure(result, "c.dctx");
      if (!testing::Test::HasFailure()) continue;
      FAIL() << "byte " << pos << " xor " << flip << ": "
             << result.status().message();
    }
  }
}

TEST(DctxFile, TrailingGarbageIsRejected) {
  const std::string bytes = Encode(MakeSampleProfile(10)) + "\n";
  const StatusOr<Profile> result = DecodeProfile(bytes, "g.dctx");
  ExpectCleanFailure(result, "g.dctx");
  EXPECT_EQ(result.status().message(),
            "g.dctx: trailing garbage after the payload (1 bytes; file "
            "corrupt)");
}

TEST(DctxFile, NewerMajorVersionIsRejected) {
  const std::string bytes = Wrap(EncodePayload(MakeSampleProfile(10)), 2, 0);
  const StatusOr<Profile> result = DecodeProfile(bytes, "x.dctx");
  ExpectCleanFailure(result, "x.dctx");
  EXPECT_EQ(result.status().message(),
            "x.dctx: written by a newer DeepContext (format 2.x); this reader "
            "supports 1.x");
}

TEST(DctxFile, NewerMinorVersionWithNewSectionsIsAccepted) {
  const Profile expected = MakeSampleProfile(100);
  std::string payload = EncodePayload(expected);
  payload += std::string("\x2a\x03new", 5);  // section 42, 3 bytes
  const StatusOr<Profile> result =
      DecodeProfile(Wrap(payload, kFormatMajor, kFormatMinor + 1), "m");
  ASSERT_TRUE(result.ok()) << result.status().message();
  ExpectSameProfile(expected, *result);
}

// Profiles that break one invariant each; EncodeProfile writes them as they
// are, so the reader's own checks are what rejects them.
struct BrokenCase {
  const char* what;
  void (*breakit)(Profile*);
  const char* error;
};

const BrokenCase kBrokenCases[] = {
    {"parent above index", [](Profile* p) { p->nodes[5].parent = 9; },
     "node 5: parent 9 is not below the node's index"},
    {"parent equal to index", [](Profile* p) { p->nodes[7].parent = 7; },
     "node 7: parent 7 is not below the node's index"},
    {"root with a parent", [](Profile* p) { p->nodes[0].parent = 1; },
     "root node's parent is not itself"},
    {"name out of range", [](Profile* p) { p->nodes[3].name = 11; },
     "node 3: name string id 11 out of range (11 strings)"},
    {"file out of range", [](Profile* p) { p->nodes[4].file = 1000000; },
     "node 4: file string id 1000000 out of range (11 strings)"},
    {"unknown kind",
     [](Profile* p) { p->nodes[2].kind = static_cast<FrameKind>(14); },
     "node 2: unknown kind 14 (max 13)"},
    {"second root", [](Profile* p) { p->nodes[6].kind = FrameKind::kRoot; },
     "node 6: second root node"},
    {"first string not empty", [](Profile* p) { p->strings[0] = "?"; },
     "string 0 is not the empty string"},
    {"value node out of range", [](Profile* p) { p->values[4].node = 20; },
     "value 4: node id 20 out of range (20 nodes)"},
    {"value metric out of range", [](Profile* p) { p->values[4].metric = 3; },
     "value 4: metric id 3 out of range (3 metrics)"},
    {"duplicate value", [](Profile* p) { p->values.push_back(p->values[0]); },
     "duplicate value for node 0, metric 0"},
    {"duplicate metric name", [](Profile* p) { p->metrics[2].name = "calls"; },
     "metric 2: duplicate name 'calls'"},
};

TEST(DctxFile, ReaderRejectsInvalidProfiles) {
  for (const BrokenCase& c : kBrokenCases) {
    Profile profile = MakeSampleProfile(20);
    c.breakit(&profile);
    const StatusOr<Profile> result = DecodeProfile(Encode(profile), "b.dctx");
    ExpectCleanFailure(result, "b.dctx");
    EXPECT_EQ(result.status().message(),
              std::string("b.dctx: invalid profile: ") + c.error)
        << c.what;
  }
}

TEST(DctxFile, WriterRefusesInvalidProfiles) {
  ScratchDir dir;
  const std::string path = dir.path() + "/bad.dctx";
  for (const BrokenCase& c : kBrokenCases) {
    Profile profile = MakeSampleProfile(20);
    c.breakit(&profile);
    EXPECT_EQ(WriteProfileFile(profile, path).message(),
              path + ": invalid profile: " + c.error)
        << c.what;
  }
  EXPECT_TRUE(dir.List().empty());
}

TEST(DctxFile, WriteReplacesAnExistingFile) {
  ScratchDir dir;
  const std::string path = dir.path() + "/prof.dctx";
  WriteBytes(path, "old contents that are not a profile");
  const Profile first = MakeSampleProfile(100);
  ASSERT_TRUE(WriteProfileFile(first, path).ok());
  EXPECT_EQ(ReadBytes(path), Encode(first));

  const Profile second = MakeSampleProfile(7);
  ASSERT_TRUE(WriteProfileFile(second, path).ok());
  const StatusOr<Profile> result = ReadProfileFile(path);
  ASSERT_TRUE(result.ok()) << result.status().message();
  ExpectSameProfile(second, *result);
  EXPECT_EQ(dir.List(), std::vector<std::string>{"prof.dctx"});
}

TEST(DctxFile, WriteIntoAMissingDirectoryFails) {
  ScratchDir dir;
  const std::string path = dir.path() + "/no/such/dir/prof.dctx";
  const std::string error =
      WriteProfileFile(MakeSampleProfile(10), path).message();
  EXPECT_EQ(error.rfind(path + ": ", 0), 0u) << error;
  EXPECT_NE(error.find("No such file or directory"), std::string::npos)
      << error;
  EXPECT_EQ(error.find('\n'), std::string::npos);
  EXPECT_TRUE(dir.List().empty());
}

TEST(DctxFile, FailedRenameRemovesTheTemporaryFile) {
  ScratchDir dir;
  // rename() cannot replace a non-empty directory with a file.
  const std::string path = dir.path() + "/taken";
  ASSERT_EQ(mkdir(path.c_str(), 0755), 0);
  WriteBytes(path + "/inside", "x");
  const std::string error =
      WriteProfileFile(MakeSampleProfile(10), path).message();
  EXPECT_EQ(error.rfind(path + ": cannot rename ", 0), 0u) << error;
  EXPECT_NE(error.find("Is a directory"), std::string::npos) << error;
  EXPECT_EQ(dir.List(), std::vector<std::string>{"taken"});
}

TEST(DctxFile, EmptyPathIsAnError) {
  EXPECT_EQ(WriteProfileFile(Profile{}, "").message(),
            "(empty path): no file name given");
}

TEST(DctxFile, ConcurrentWritersLeaveOneCompleteFile) {
  ScratchDir dir;
  const std::string path = dir.path() + "/shared.dctx";
  std::vector<Profile> profiles;
  for (uint32_t i = 0; i < 4; ++i)
    profiles.push_back(MakeSampleProfile(50 + i));
  std::vector<Status> written(profiles.size());
  std::vector<std::thread> threads;
  for (size_t t = 0; t < profiles.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 10 && written[t].ok(); ++round) {
        written[t] = WriteProfileFile(profiles[t], path);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const Status& status : written)
    EXPECT_TRUE(status.ok()) << status.message();
  const StatusOr<Profile> result = ReadProfileFile(path);
  ASSERT_TRUE(result.ok()) << result.status().message();
  const size_t last = result->nodes.size() - 50;
  ASSERT_LT(last, profiles.size());
  ExpectSameProfile(profiles[last], *result);
  EXPECT_EQ(dir.List(), std::vector<std::string>{"shared.dctx"});
}

}  // namespace
}  // namespace deepcontext::format
