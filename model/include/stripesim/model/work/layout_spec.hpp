#pragma once
// Layout specs as users write them: contiguous, striped, zigzag, block-striped:S,
// permutation:FILE. A permutation file is JSON: {"blocks": [[p, ...], ...]}, one array per
// device listing the original positions it holds in local order (a bare array of arrays works too).
// Beside "blocks" an object may carry "description" and what `stripesim layout` writes to say
// what the file is (layout_export.hpp): "schema" (kLayoutSchema), "layout", "seq_len", "devices",
// "block_size", "tile", "tiling", "mask", "padding". seq_len, devices and block_size, when
// present, must match the sequence the file is loaded for (a clear error instead of a count
// mismatch); layout, tile, tiling, mask and padding only describe how it was built, since a
// layout may be counted under any mask and tile. Any other field is rejected, as in every
// other file stripesim reads.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/io/schemas.hpp"
#include "stripesim/model/work/layout.hpp"
#include "stripesim/model/work/mask.hpp"
#include "stripesim/model/work/tile_shape.hpp"

namespace stripesim::model {

// What the layouts built from the workload need: the mask (documents for doc-zigzag and
// doc-striped; any mask for balanced, causal when absent) and the tile balanced prices work in.
struct LayoutContext {
  const Mask* mask = nullptr;
  TileShape tile{128, 128};
  Tiling tiling = Tiling::fixed;  // how the kernel cuts tiles: what balanced prices work in
};

class LayoutPlan;

// A layout spec checked against the sequence, the devices and the mask, not built yet: every
// InputError the layout can raise is raised here, none by build().
// Also: doc-zigzag, doc-striped, balanced, balanced:SLOT (see document_layouts.hpp), ptrr and
// ptrr:BLOCK (ptrr_layout.hpp; BLOCK defaults to the query tile).
[[nodiscard]] LayoutPlan plan_layout(std::string_view spec, Count seq_len, Count devices,
                                     const LayoutContext& context = {});
// The kind a spec names, from its name alone (nothing parsed after the ':', no file read), or
// none for a spec plan_layout would refuse as an unknown layout.
[[nodiscard]] std::optional<LayoutKind> layout_kind_of(std::string_view spec);
// Whether layouts of this kind have the same shape at every size whatever the mask (contiguous,
// striped, zigzag, block-striped): a small example draws them faithfully. A permutation holds one
// length; the others are computed from the documents, the mask or the tile.
[[nodiscard]] bool same_shape_at_every_size(LayoutKind kind);
// `first`, raised planning one of `specs` at its length, said again with the nearest lengths every
// one of them takes (each divides by its own multiple of N: N, zigzag's 2N, block-striped:S's
// S*N), where those are not the ones `first` names; `first` as it is where they are, or where a
// spec's length is not free (a permutation file holds one; per-document layouts follow their
// documents, ptrr and balanced need N, which every such multiple holds).
[[nodiscard]] InputError for_every_layout(const IndivisibleLength& first, const std::vector<std::string>& specs, Count devices);
// The same over every ring size of `devices` (a validator's matrix), offering no length past `longest`.
[[nodiscard]] InputError for_every_layout(const IndivisibleLength& first, const std::vector<std::string>& specs,
                                          const std::vector<Count>& devices, Count longest = kMaxSeqLen);
// plan_layout(...).build().
[[nodiscard]] Layout parse_layout(std::string_view spec, Count seq_len, Count devices,
                                  const LayoutContext& context = {});

// What plan_layout returns. Structured layouts cost nothing to build and a permutation file is
// read while planning (a plan has read every file), so those are held built; the layouts computed
// from the mask (doc-zigzag, doc-striped, ptrr, balanced: balancing 1M tokens takes half a
// second) are computed by build(), so that planning a whole sweep, or checking it in parse-only
// mode, computes none of them and running it computes each once.
class LayoutPlan {
 public:
  // `threads`: how many a computed layout may use (0: one per core; balanced prices its
  // candidates side by side), the output the same whatever the number.
  [[nodiscard]] Layout build(unsigned threads = 0) const&;
  [[nodiscard]] Layout build(unsigned threads = 0) &&;

 private:
  friend LayoutPlan plan_layout(std::string_view, Count, Count, const LayoutContext&);

  std::optional<Layout> built_;             // built while planning
  LayoutKind computed_ = LayoutKind::balanced;  // else computed by build(): doc-zigzag, doc-striped, ptrr, balanced
  std::optional<Mask> mask_;  // what a computed layout is computed from
  Count devices_ = 0;
  Count size_ = 0;  // ptrr's block; balanced's chunk (0: the balancer chooses)
  TileShape tile_{128, 128};
  Tiling tiling_ = Tiling::fixed;
};

// `seq_len` and `devices` are the sequence's (after any padding), checked against the file.
[[nodiscard]] Layout load_permutation_file(const std::string& path, Count seq_len, Count devices);
// How many device blocks a permutation file holds: the only ring size it can be loaded for
// (`plan` searches it at that context-parallel degree alone).
[[nodiscard]] Count permutation_file_devices(const std::string& path);

// Splits "a,b,c" into its non-empty items; an empty item is an InputError naming `what`.
[[nodiscard]] std::vector<std::string> split_list(std::string_view text, const InputName& what);
// split_list for a list of names, where an item given twice (the same layout_identity: case
// aside, as names match) would only repeat rows of the output: that is an InputError naming the item.
[[nodiscard]] std::vector<std::string> split_distinct_list(std::string_view text, const InputName& what);
// Where layouts are dealt: the tile, the mask's length after any padding and the devices the
// layout deals to (ptrr's default block depends on all three).
struct LayoutPoint {
  TileShape tile;
  Count seq_len = 0;
  Count devices = 0;
};
// layout_identity, where `ptrr` (no block) is the ptrr:B it deals at `point`.
[[nodiscard]] std::string layout_identity_at(std::string_view spec, const LayoutPoint& point);
// Refuses (an InputError by kind, --layouts) two specs of `specs` that name one layout at `point`:
// ptrr and ptrr:B where B is ptrr's default block there. A command of one point (analyze,
// simulate) would print its row twice under one name; a sweep's other points tell them apart, so
// it runs them.
void require_layouts_apart_at(const std::vector<std::string>& specs, const LayoutPoint& point);
// The file a layout spec reads ("permutation:FILE", the name case aside), or empty.
[[nodiscard]] std::string layout_file(std::string_view spec);
// What makes two layout specs one layout: the spec, case aside, a size however written (1k,
// 1024), and a permutation file by the file it is, however its path is spelled (f.json,
// ./f.json, dir//f.json, a link to it). A default (ptrr's block, the query tile) is not resolved:
// two specs that agree at one tile or length are two layouts, as two masks are.
[[nodiscard]] std::string layout_identity(std::string_view spec);

}  // namespace stripesim::model
