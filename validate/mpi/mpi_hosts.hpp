#pragma once
// The host every rank of the job runs on, known to every rank: ranks on one host share a node, so
// the prediction routes their hops inside the node and the others over the network.
#include <string>
#include <vector>

namespace stripesim::validate::mpi {

// Each rank's MPI_Get_processor_name, in rank order. Every rank calls it: rank 0 collects the
// names point to point (a rank that never answers is named, within `timeout_s`) and sends the
// list back to every rank.
[[nodiscard]] std::vector<std::string> gather_hosts(int rank, int ranks, double timeout_s);

}  // namespace stripesim::validate::mpi
