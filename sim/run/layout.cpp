#include "run/layout.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace ironlaw::run {

int Layout::rank_of(const Coord& c) const {
  int r = 0;
  for (int d = 0; d < kDims; ++d) r += c.at[d] * stride[d];
  return r;
}

Coord Layout::coord_of(int rank) const {
  Coord c;
  for (int d = 0; d < kDims; ++d) c.at[d] = (rank / stride[d]) % size[d];
  return c;
}

std::vector<int> Layout::group(int rank, Dim d) const {
  Coord c = coord_of(rank);
  std::vector<int> out;
  out.reserve(static_cast<std::size_t>(degree(d)));
  for (int i = 0; i < degree(d); ++i) {
    c[d] = i;
    out.push_back(rank_of(c));
  }
  return out;
}

std::vector<int> Layout::group(int rank, Dim a, Dim b) const {
  Coord c = coord_of(rank);
  std::vector<int> out;
  for (int i = 0; i < degree(a); ++i) {
    for (int j = 0; j < degree(b); ++j) {
      c[a] = i;
      c[b] = j;
      out.push_back(rank_of(c));
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<int> Layout::ep_group(int rank) const {
  Coord c = coord_of(rank);
  std::vector<int> out;
  if (expert_folded) {
    const int block = expert_index(c) / ep;
    for (int q = block * ep; q < (block + 1) * ep; ++q) out.push_back(rank_of(at_expert_index(c, q)));
    return out;
  }
  const int block = c[Dim::dp] / ep;
  for (int i = 0; i < ep; ++i) {
    c[Dim::dp] = block * ep + i;
    out.push_back(rank_of(c));
  }
  return out;
}

int Layout::ep_group_index(int rank) const {
  const Coord c = coord_of(rank);
  return expert_folded ? expert_index(c) / ep : c[Dim::dp] / ep;
}

std::vector<int> Layout::edp_group(int rank) const {
  const Coord c = coord_of(rank);
  std::vector<int> out;
  if (expert_folded) {
    for (int q = expert_index(c) % ep; q < tp * dp; q += ep) out.push_back(rank_of(at_expert_index(c, q)));
  } else {
    Coord x = c;
    for (int d = c[Dim::dp] % ep; d < dp; d += ep)
      for (int k = 0; k < cp; ++k) {
        x[Dim::dp] = d;
        x[Dim::cp] = k;
        out.push_back(rank_of(x));
      }
  }
  std::sort(out.begin(), out.end());
  return out;
}

int Layout::first_layer(int j) const {
  return std::accumulate(chunk_layers.begin(), chunk_layers.begin() + j, 0);
}

std::vector<int> split_layers(int layers, int chunks) {
  if (chunks < 1 || layers < 1 || chunks > layers + 2)
    throw std::invalid_argument("split_layers: need 1 ≤ chunks ≤ layers + 2");
  if (chunks > layers) {
    // One layer a chunk, and the first (then also the last) chunk holds none: the embedding
    // alone, the LM head and loss alone (Megatron-core's account_for_embedding_in_pipeline_split
    // and account_for_loss_in_pipeline_split; Llama 3 405B's 126 layers on 16 stages of 8
    // chunks, §3.3.2).
    std::vector<int> out(static_cast<std::size_t>(chunks), 1);
    out.front() = 0;
    if (chunks == layers + 2) out.back() = 0;
    return out;
  }
  const int per = (layers + chunks - 1) / chunks;  // the full size of a middle chunk
  std::vector<int> out(static_cast<std::size_t>(chunks), per);
  int shortfall = per * chunks - layers;
  // Take the shortfall from the ends first (first, last, first, last, ...), then inwards.
  int lo = 0, hi = chunks - 1;
  bool from_front = true;
  while (shortfall > 0) {
    int& c = out[static_cast<std::size_t>(from_front ? lo : hi)];
    if (c > 1) {
      --c;
      --shortfall;
    }
    if (from_front) ++lo; else --hi;
    from_front = !from_front;
    if (lo > hi) {
      lo = 0;
      hi = chunks - 1;
    }
  }
  return out;
}

int nccl_communicators(const Layout& layout) {
  int groups = 0;
  for (int degree : {layout.tp, layout.cp, layout.dp, layout.pp, layout.ep}) groups += degree > 1 ? 1 : 0;
  return groups;
}

double allocator_capacity(const config::DeviceSpec& device, const Layout& layout) {
  return device.hbm_bytes - device.cuda_context_bytes - nccl_communicators(layout) * device.nccl_communicator_bytes;
}

Layout resolve_layout(const config::Scenario& s) {
  Layout l;
  const auto& p = s.parallel;
  l.gpus = s.gpus();
  l.tp = p.tp;
  l.pp = p.pp;
  l.cp = p.cp;
  l.ep = p.ep;
  l.expert_folded = p.expert_folded();
  l.dp = p.dp > 0 ? p.dp : l.gpus / (p.tp * p.pp * p.cp);
  l.virtual_stages = p.pp_schedule == "interleaved" ? p.virtual_stages : 1;

  std::vector<Diagnostic> refused;
  auto refuse = [&](const std::string& key, const std::string& what) {
    refused.push_back({s.where(key), key, what});
  };
  if (p.ep > 1 && s.model.experts <= 1) refuse("parallel.ep", "expert parallelism needs a mixture-of-experts model");
  if (!refused.empty()) throw InputError(std::move(refused));

  // Placement: strides follow parallel.order, innermost first.
  l.size = {l.tp, l.cp, l.pp, l.dp};
  int stride = 1;
  for (const auto& name : p.order) {
    const Dim d = name == "tp" ? Dim::tp : name == "cp" ? Dim::cp : name == "pp" ? Dim::pp : Dim::dp;
    l.stride[static_cast<int>(d)] = stride;
    stride *= l.degree(d);
  }

  const int seq = s.training.sequence_length;
  const long long sequences = static_cast<long long>(s.training.global_batch_tokens / seq);
  l.microbatch_sequences = p.microbatch_size;
  l.microbatches = static_cast<int>(sequences / (static_cast<long long>(l.dp) * l.microbatch_sequences));
  if (l.microbatches < 1 ||
      static_cast<long long>(l.microbatches) * l.microbatch_sequences * l.dp != sequences) {
    throw InputError(s.where("training.global_batch_tokens"), "training.global_batch_tokens",
                     "the global batch of " + std::to_string(sequences) + " sequences does not split into " +
                         "microbatches of " + std::to_string(l.microbatch_sequences) + " over " +
                         std::to_string(l.dp) + " data-parallel ranks");
  }
  l.microbatch_group = p.microbatch_group_size > 0 ? p.microbatch_group_size : l.pp;
  if (l.virtual_stages > 1) {
    // Megatron-core's checks (forward_backward_pipelining_with_interleaving): the group spans pp
    // to m microbatches, and a last group shorter than the others still spans pp (a shorter one
    // would wait on its own first chunk's outputs: "dependency bubbles"). With the default group
    // of pp, the microbatches are a multiple of pp, as torch.distributed.pipelining's
    // Interleaved1F1B also requires.
    const int m = l.microbatches, n = l.microbatch_group, rest = m % n;
    const bool set = p.microbatch_group_size > 0;
    const std::string key = set ? "parallel.microbatch_group_size" : "parallel.virtual_stages";
    if (n > m) {
      throw InputError(s.where(key), key,
                       "the interleaved schedule needs a microbatch group (" + std::to_string(n) +
                           (set ? "" : ", pp by default") + ") of at most the microbatches per pipeline (" +
                           std::to_string(m) + ")");
    }
    if (rest != 0 && rest < l.pp) {
      throw InputError(s.where(key), key,
                       "the interleaved schedule needs the microbatches per pipeline (" + std::to_string(m) +
                           ") to be a multiple of the microbatch group (" + std::to_string(n) +
                           (set ? "" : ", pp by default") + "), or to leave a last group of at least pp (" +
                           std::to_string(l.pp) + "); got a last group of " + std::to_string(rest) +
                           (set ? std::string()
                                : std::string("; parallel.microbatch_group_size sets another group, from pp to the "
                                              "microbatches (Megatron-core's microbatch_group_size_per_vp_stage)")));
    }
    if (n < l.pp) {
      throw InputError(s.where(key), key,
                       "the interleaved schedule needs a microbatch group of at least pp (" + std::to_string(l.pp) +
                           "), got " + std::to_string(n));
    }
  }
  l.tokens_per_step = static_cast<double>(sequences) * seq;
  l.chunk_layers = split_layers(s.model.layers, l.chunks());
  return l;
}

}  // namespace ironlaw::run
