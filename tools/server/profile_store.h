// The profiles `deepcontext view` shows: each file as its own tree, plus,
// for several files, one merged tree (processes and ranks side by side).
// Files are read on a background thread from the start, so the server can
// answer at once and a file that cannot be read fails alone.
#pragma once

#include <future>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tools/analysis/profile_tree.h"
#include "tools/server/status_or.h"

namespace deepcontext::server {

// One readable profile, with what the API serves from it prepared once.
struct LoadedProfile {
  analysis::ProfileTree tree;
  std::string view_data;                // exporter::RenderViewData(tree)
  std::set<std::string> source_files;  // every file a frame names
};

using LoadResult = StatusOr<std::shared_ptr<const LoadedProfile>>;

class ProfileStore {
 public:
  // Starts reading files in order; the merged tree comes last.
  explicit ProfileStore(std::vector<std::string> files);
  ~ProfileStore();
  ProfileStore(const ProfileStore&) = delete;
  ProfileStore& operator=(const ProfileStore&) = delete;

  // Number of profiles: one per file, plus the merged one for 2+ files.
  size_t size() const { return entries_.size(); }

  // "train.dctx" as given on the command line, or "all profiles".
  const std::string& Label(size_t id) const { return entries_[id]->label; }

  // True once profile id has been read (or failed to be).
  bool Settled(size_t id) const;

  // Waits for profile id and returns it or why it could not be read;
  // id must be < size().
  LoadResult Get(size_t id) const;

 private:
  struct Entry {
    std::string label;
    std::promise<LoadResult> promise;
    std::shared_future<LoadResult> result;
  };
  void LoadAll(const std::vector<std::string>& files);

  std::vector<std::unique_ptr<Entry>> entries_;
  std::thread loader_;
};

}  // namespace deepcontext::server
