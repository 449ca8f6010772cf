#pragma once
// MPI for the life of a backend: initialised unless something else already did (one thread calls
// MPI: the ring's compute and its hand-offs share the main thread), finalised by whoever
// initialised it.
namespace stripesim::validate::mpi {

class Session {
 public:
  Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session();
  [[nodiscard]] int rank() const { return rank_; }
  [[nodiscard]] int ranks() const { return ranks_; }

 private:
  bool owns_mpi_ = false;
  int rank_ = 0;
  int ranks_ = 1;
};

}  // namespace stripesim::validate::mpi
