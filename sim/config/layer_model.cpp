#include "config/layer_model.hpp"

#include <yaml-cpp/yaml.h>

#include <utility>

#include "config/reader.hpp"
#include "config/validate.hpp"

namespace ironlaw::config {

namespace {

using detail::Form;
using detail::KeyKind;
using detail::LoadState;
using detail::Rule;
using detail::Section;
using detail::Sign;

constexpr Rule kPositive{.sign = Sign::positive};
constexpr Rule kNonNegative{.sign = Sign::non_negative};

const std::vector<std::string> kKinds{"dense",      "conv2d",  "max_pool", "avg_pool", "global_avg_pool",
                                      "batch_norm", "relu",    "flatten",  "dropout",  "embedding",
                                      "lstm",       "gru",     "attention", "bottleneck"};

void parse_layer(Section s, LayerSpec& l) {
  s.choice("kind", l.kind, kKinds, Rule{.required = true});
  s.text("name", l.name);
  s.integer("units", l.units, kPositive);
  s.integer("filters", l.filters, kPositive);
  s.integer("kernel", l.kernel, kPositive);
  s.integer("stride", l.stride, kPositive);
  s.integer("padding", l.padding, kNonNegative);
  s.integer("vocab", l.vocab, kPositive);
  s.integer("heads", l.heads, kPositive);
  s.integer("width", l.width, kPositive);
  s.integer("biases", l.biases, kNonNegative);
  s.flag("bias", l.bias);
  s.flag("downsample", l.downsample);
  s.integer("repeat", l.repeat, kPositive);
  s.finish();
  auto need = [&](bool ok, const char* key, const char* what) {
    if (!ok) s.state().report(s.full(key), std::string("a ") + l.kind + " layer needs " + what);
  };
  if (l.kind == "dense" || l.kind == "lstm" || l.kind == "gru") need(l.units > 0, "units", "units > 0");
  if (l.kind == "conv2d") need(l.filters > 0, "filters", "filters > 0");
  if (l.kind == "embedding") need(l.vocab > 0 && l.units > 0, "vocab", "vocab > 0 and units > 0");
  if (l.kind == "attention") need(l.heads > 0, "heads", "heads > 0");
  if (l.kind == "bottleneck") need(l.width > 0 && l.units > 0, "width", "width > 0 and units > 0");
}

}  // namespace

void detail::parse_layer_card(Section s, LayerModelSpec& m) {
  std::string architecture;
  s.choice("architecture", architecture, {"layer_list"}, Rule{.required = true});
  s.text("name", m.name, Rule{.required = true});
  s.text("source", m.source, Rule{.required = true});
  s.choice("input_kind", m.input_kind, {"image", "vector", "tokens"}, Rule{.required = true});
  LoadState& st = s.state();
  if (const auto input = s.raw("input", KeyKind::list, Rule{.required = true})) {
    const std::size_t want = m.input_kind == "image" ? 3 : 1;
    bool good = input->IsSequence() && input->size() == want;
    if (good) {
      for (const auto& item : *input) {
        int v = 0;
        good = good && item.IsScalar() && YAML::convert<int>::decode(item, v) && v > 0 &&
               detail::bound_problem(s.full("input[]"), v).empty();
        if (good) m.input.push_back(v);
      }
    }
    if (!good) {
      const detail::KeyBound* b = detail::bound_for(s.full("input[]"));
      const std::string range = b ? " from 1 to " + std::to_string(static_cast<long long>(b->max)) : " positive";
      st.fail(s.full("input"), m.input_kind == "image" ? "expected [channels, height, width], each" + range
                                                       : "expected [n] with n" + range);
    }
  }
  if (st.collecting) {  // the keys of one layer, listed as model.layers[].KEY
    LayerSpec scratch;
    parse_layer(Section(st, YAML::Node(), s.file(), s.full("layers") + "[]", SourceLoc{}, false), scratch);
  }
  if (const auto list = s.raw("layers", KeyKind::list, Rule{.required = true})) {
    if (!list->IsSequence() || list->size() == 0) {
      st.fail(s.full("layers"), "expected a non-empty list of layers like [{ kind: dense, units: 10 }]");
    } else {
      long long total = 0;
      for (std::size_t i = 0; i < list->size(); ++i) {
        const YAML::Node item = (*list)[i];
        const std::string key = s.full("layers") + "[" + std::to_string(i) + "]";
        if (!item.IsMap()) {
          st.error(s.position("layers", item), key, "expected a mapping like { kind: dense, units: 10 }");
          continue;
        }
        LayerSpec l;
        parse_layer(Section(st, item, s.file(), key, s.position("layers", item), false), l);
        total += l.repeat;
        m.layers.push_back(std::move(l));
      }
      // Repeats expand into layers: their total has the bound of a model's layers.
      const detail::KeyBound* b = detail::bound_for("model.layers");
      if (b && static_cast<double>(total) > b->max) {
        st.fail(s.full("layers"), "the list expands to " + std::to_string(total) + " layers (repeats counted), above " +
                                      std::to_string(static_cast<long long>(b->max)));
      }
    }
  }
  {
    Section pub = s.section("published");
    double params = 0;
    std::string source;
    if (pub.number("params", params, Dimension::count,
                   Rule{.sign = Sign::non_negative, .form = Form::sourced, .source = &source})) {
      m.published.params = params;
      m.published.sources["params"] = source;
    }
    pub.finish();
  }
  s.finish();
}

bool is_layer_model(const std::string& path) {
  LoadState st;
  const auto doc = detail::load_document(path, st, SourceLoc{path, 0, 0}, "");
  if (!doc) throw InputError(std::move(st.diagnostics));
  const YAML::Node a = doc->root["architecture"];
  return a && a.IsScalar() && a.Scalar() == "layer_list";
}

LayerModelSpec load_layer_model(const std::string& path) {
  try {
    LoadState st;
    st.root_file = path;
    const auto doc = detail::load_document(path, st, SourceLoc{path, 0, 0}, "");
    if (!doc) throw InputError(std::move(st.diagnostics));
    LayerModelSpec m;
    m.file = path;
    detail::parse_layer_card(Section(st, doc->root, path, "", SourceLoc{path, 1, 1}, false), m);
    if (!st.diagnostics.empty()) throw InputError(std::move(st.diagnostics));
    return m;
  } catch (const YAML::Exception& e) {
    const int line = e.mark.line < 0 ? 0 : e.mark.line + 1;
    throw InputError(SourceLoc{path, line, e.mark.column + 1}, "", "cannot read the YAML: " + e.msg);
  }
}

}  // namespace ironlaw::config
