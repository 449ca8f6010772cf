#include "stripesim/model/work/layout.hpp"

#include <fmt/format.h>

#include "stripesim/model/io/input_error.hpp"

namespace stripesim::model {

void require_devices(Count devices) {
  if (devices < 1 || devices > kMaxDevices) {
    throw InputError(Input::devices, std::to_string(devices), fmt::format("must be between 1 and {}", kMaxDevices));
  }
}

void require_seq_len(Count seq_len) {
  if (seq_len < 1 || seq_len > kMaxSeqLen) {
    throw InputError(Input::seq_len, std::to_string(seq_len),
                     fmt::format("must be between 1 and 2^31 = {} so that every pair count fits in 64 bits", kMaxSeqLen));
  }
}

namespace {

void require_sizes(Count seq_len, Count devices) {
  require_devices(devices);
  require_seq_len(seq_len);
}

}  // namespace

IndivisibleLength::IndivisibleLength(Count seq_len, Count divisor, std::string need)
    : InputError(Input::seq_len, std::to_string(seq_len), fmt::format("{}; {}", need, nearest_multiples(seq_len, divisor))),
      seq_len_(seq_len),
      divisor_(divisor),
      need_(std::move(need)) {}

std::string nearest_multiples(Count seq_len, Count multiple, bool every_listed_layout, Count longest) {
  const std::string_view lengths = every_listed_layout ? "lengths every listed layout takes" : "such lengths";
  const std::string_view length = every_listed_layout ? "length every listed layout takes" : "such length";
  const Count remainder = seq_len % multiple;
  // The multiples on either side, but never 0 tokens nor more than the longest sequence counted.
  const Count below = seq_len - remainder;
  const Count above = seq_len + (multiple - remainder);
  const std::string pad = fmt::format("pad {} token{} to reach {}", above - seq_len, above - seq_len == 1 ? "" : "s", above);
  if (below > 0 && above <= longest) return fmt::format("the nearest {} are {} and {} ({})", lengths, below, above, pad);
  if (above <= longest) return fmt::format("the nearest {} is {} ({})", length, above, pad);
  if (below > 0) return fmt::format("the nearest {} is {}", length, below);
  return fmt::format("no {} is at most {}", length, longest == kMaxSeqLen ? std::string("2^31") : std::to_string(longest));
}

void require_seq_len_divisible(Count seq_len, Count divisor, std::string_view layout, std::string_view what) {
  if (seq_len % divisor == 0) return;
  throw IndivisibleLength(seq_len, divisor, fmt::format("layout {} needs it divisible by {} = {}", layout, what, divisor));
}

Layout::Layout(LayoutKind kind, std::string name, Count seq_len, Count devices, Count stripe)
    : kind_(kind), name_(std::move(name)), seq_len_(seq_len), devices_(devices),
      block_size_(seq_len / devices), stripe_(stripe) {}

Layout Layout::contiguous(Count seq_len, Count devices) {
  require_sizes(seq_len, devices);
  require_seq_len_divisible(seq_len, devices, "contiguous", "N");
  return Layout(LayoutKind::contiguous, "contiguous", seq_len, devices, 0);
}

Layout Layout::striped(Count seq_len, Count devices) {
  require_sizes(seq_len, devices);
  require_seq_len_divisible(seq_len, devices, "striped", "N");
  return Layout(LayoutKind::striped, "striped", seq_len, devices, 0);
}

Layout Layout::zigzag(Count seq_len, Count devices) {
  require_sizes(seq_len, devices);
  require_seq_len_divisible(seq_len, 2 * devices, "zigzag", "2N");
  return Layout(LayoutKind::zigzag, "zigzag", seq_len, devices, seq_len / (2 * devices));
}

Layout Layout::block_striped(Count seq_len, Count devices, Count stripe) {
  require_sizes(seq_len, devices);
  const std::string spec = fmt::format("block-striped:{}", stripe);
  if (stripe < 1) throw InputError(Input::layouts, spec, "the stripe width must be at least 1");
  if (stripe > seq_len / devices) {
    throw InputError(Input::layouts, spec, fmt::format("the stripe width must be at most n/N = {}", seq_len / devices));
  }
  require_seq_len_divisible(seq_len, stripe * devices, spec, "s*N");
  return Layout(LayoutKind::block_striped, fmt::format("block-striped:{}", stripe), seq_len, devices, stripe);
}

Layout Layout::permutation(const std::vector<std::vector<Position>>& blocks, Count seq_len, std::string source) {
  return from_blocks(blocks, seq_len, fmt::format("permutation:{}", source), LayoutKind::permutation);
}

Layout Layout::from_blocks(const std::vector<std::vector<Position>>& blocks, Count seq_len, std::string name,
                           LayoutKind kind) {
  const auto devices = static_cast<Count>(blocks.size());
  const std::string label = name;
  if (devices < 1) throw InputError(fmt::format("{}: holds no device blocks", label));
  require_sizes(seq_len, devices);
  require_seq_len_divisible(seq_len, devices, label, "N");
  const Count c = seq_len / devices;
  Layout layout(kind, std::move(name), seq_len, devices, 0);
  layout.slots_.reserve(static_cast<size_t>(seq_len));
  layout.slot_of_.assign(static_cast<size_t>(seq_len), -1);
  for (Count d = 0; d < devices; ++d) {
    const auto& block = blocks[static_cast<size_t>(d)];
    if (static_cast<Count>(block.size()) != c) {
      throw InputError(fmt::format("{}: device {} holds {} positions, every device must hold n/N = {}", label, d,
                                   block.size(), c));
    }
    for (Count l = 0; l < c; ++l) {
      const Position p = block[static_cast<size_t>(l)];
      if (p < 0 || p >= seq_len) {
        throw InputError(fmt::format("{}: position {} (device {}, local {}) is outside [0, {})", label, p, d, l,
                                     seq_len));
      }
      if (layout.slot_of_[static_cast<size_t>(p)] != -1) {
        throw InputError(fmt::format("{}: position {} appears twice, a layout must be a bijection", label, p));
      }
      layout.slot_of_[static_cast<size_t>(p)] = d * c + l;
      layout.slots_.push_back(p);
    }
  }
  return layout;
}

Position Layout::position(DeviceId device, Count local) const {
  const Count c = block_size_;
  switch (kind_) {
    case LayoutKind::contiguous: return device * c + local;
    case LayoutKind::striped: return local * devices_ + device;
    case LayoutKind::zigzag: {
      const Count h = stripe_;
      const Count chunk = local < h ? device : 2 * devices_ - 1 - device;
      return chunk * h + local % h;
    }
    case LayoutKind::block_striped: {
      const Count s = stripe_;
      return (local / s * devices_ + device) * s + local % s;
    }
    case LayoutKind::permutation:
    case LayoutKind::doc_zigzag:
    case LayoutKind::doc_striped:
    case LayoutKind::balanced:
    case LayoutKind::ptrr: return slots_[static_cast<size_t>(device * c + local)];
  }
  return -1;
}

Placement Layout::locate(Position p) const {
  const Count c = block_size_;
  switch (kind_) {
    case LayoutKind::contiguous: return {p / c, p % c};
    case LayoutKind::striped: return {p % devices_, p / devices_};
    case LayoutKind::zigzag: {
      const Count h = stripe_;
      const Count chunk = p / h;
      if (chunk < devices_) return {chunk, p % h};
      return {2 * devices_ - 1 - chunk, h + p % h};
    }
    case LayoutKind::block_striped: {
      const Count s = stripe_;
      const Count stripe_index = p / s;
      return {stripe_index % devices_, stripe_index / devices_ * s + p % s};
    }
    case LayoutKind::permutation:
    case LayoutKind::doc_zigzag:
    case LayoutKind::doc_striped:
    case LayoutKind::balanced:
    case LayoutKind::ptrr: {
      const Count slot = slot_of_[static_cast<size_t>(p)];
      return {slot / c, slot % c};
    }
  }
  return {-1, -1};
}

std::vector<Run> Layout::runs(DeviceId device) const {
  const Count c = block_size_;
  switch (kind_) {
    case LayoutKind::contiguous: return {Run{device * c, 1, c, 0}};
    case LayoutKind::striped: return {Run{device, devices_, c, 0}};
    case LayoutKind::zigzag: {
      const Count h = stripe_;
      return {Run{device * h, 1, h, 0}, Run{(2 * devices_ - 1 - device) * h, 1, h, h}};
    }
    case LayoutKind::block_striped: {
      const Count s = stripe_;
      // s == 1 is striped: one run of stride N instead of c runs of length 1.
      if (s == 1) return {Run{device, devices_, c, 0}};
      if (s == c) return {Run{device * c, 1, c, 0}};
      std::vector<Run> runs;
      runs.reserve(static_cast<size_t>(c / s));
      for (Count j = 0; j < c / s; ++j) runs.push_back(Run{(j * devices_ + device) * s, 1, s, j * s});
      return runs;
    }
    case LayoutKind::permutation:
    case LayoutKind::doc_zigzag:
    case LayoutKind::doc_striped:
    case LayoutKind::balanced:
    case LayoutKind::ptrr: {
      // Greedy maximal arithmetic progressions with a positive stride.
      std::vector<Run> runs;
      const Position* slot = slots_.data() + device * c;
      Count l = 0;
      while (l < c) {
        Run run{slot[l], 1, 1, l};
        if (l + 1 < c && slot[l + 1] > slot[l]) {
          run.stride = slot[l + 1] - slot[l];
          while (l + run.length < c && slot[l + run.length] - slot[l + run.length - 1] == run.stride) ++run.length;
        }
        runs.push_back(run);
        l += run.length;
      }
      return runs;
    }
  }
  return {};
}

}  // namespace stripesim::model
