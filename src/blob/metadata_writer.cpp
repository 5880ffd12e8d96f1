// Writes the metadata JSON exactly as python/etrt/blob/writer.py does
// (json.dumps(..., separators=(",", ":")) over a dict built in this key
// order). tests/vectors/blob holds the bytes both must produce.

#include "blob/blob.h"
#include "blob/json_text.h"

namespace etrt::blob {
namespace {

// Compact JSON, written in order: objects and arrays put the separators between their members themselves.
class JsonWriter {
 public:
  explicit JsonWriter(std::string& out) : out_(out) {}

  // An object whose members `members(*this)` writes with field().
  template <typename Members>
  void object(Members members) {
    out_ += '{';
    first_.push_back(true);
    members(*this);
    first_.pop_back();
    out_ += '}';
  }
  // The member `key` (an ASCII identifier: nothing to escape), its value written by `value(*this)`.
  template <typename Value>
  void field(const char* key, Value value) {
    if (!first_.back()) out_ += ',';
    first_.back() = false;
    out_ += '"';
    out_ += key;
    out_ += "\":";
    value(*this);
  }
  // An array of `items`, each written by `item(*this, element)`.
  template <typename Items, typename Item>
  void array(const Items& items, Item item) {
    out_ += '[';
    for (size_t i = 0; i < items.size(); ++i) {
      if (i > 0) out_ += ',';
      item(*this, items[i]);
    }
    out_ += ']';
  }

  void string(const std::string& value) { detail::append_json_string(out_, value); }
  void integer(int64_t value) { detail::append_json_int(out_, value); }
  void boolean(bool value) { out_ += value ? "true" : "false"; }
  void integers(const std::vector<int64_t>& values) {
    array(values, [](JsonWriter& w, int64_t v) { w.integer(v); });
  }

 private:
  std::string& out_;
  std::vector<bool> first_;  // per open object: no member written yet
};

// field() value writers for the common kinds.
auto text(const std::string& v) {
  return [&v](JsonWriter& w) { w.string(v); };
}
auto number(int64_t v) {
  return [v](JsonWriter& w) { w.integer(v); };
}
auto flag(bool v) {
  return [v](JsonWriter& w) { w.boolean(v); };
}
auto numbers(const std::vector<int64_t>& v) {
  return [&v](JsonWriter& w) { w.integers(v); };
}

void write_signature(JsonWriter& w, const ProfileSignature& sig) {
  w.object([&](JsonWriter& o) {
    o.field("num_profiles", number(sig.num_profiles));
    o.field("inputs", [&](JsonWriter& a) {
      a.array(sig.inputs, [](JsonWriter& e, const SignatureInput& input) {
        e.object([&](JsonWriter& i) {
          i.field("name", text(input.name));
          i.field("profiles", [&](JsonWriter& p) {
            p.array(input.profiles, [](JsonWriter& pe, const ProfileBounds& b) {
              pe.object([&](JsonWriter& bo) {
                bo.field("min", numbers(b.min));
                bo.field("opt", numbers(b.opt));
                bo.field("max", numbers(b.max));
              });
            });
          });
        });
      });
    });
    o.field("symbolic_dims", [&](JsonWriter& a) {
      a.array(sig.symbolic_dims, [](JsonWriter& e, const SymbolicDim& s) {
        e.object([&](JsonWriter& d) {
          d.field("name", text(s.name));
          d.field("input", text(s.input));
          d.field("dim", number(s.dim));
          d.field("ranges", [&](JsonWriter& r) {
            r.array(s.ranges, [](JsonWriter& re, const std::pair<int64_t, int64_t>& range) {
              re.integers({range.first, range.second});
            });
          });
        });
      });
    });
  });
}

}  // namespace

std::string metadata_to_json(const Metadata& metadata) {
  std::string out;
  JsonWriter w(out);
  w.object([&](JsonWriter& o) {
    o.field("io_bindings", [&](JsonWriter& a) {
      a.array(metadata.io_bindings, [](JsonWriter& e, const IoBinding& b) {
        e.object([&](JsonWriter& m) {
          m.field("name", text(b.name));
          m.field("dtype", text(b.dtype));
          m.field("shape", numbers(b.shape));
          m.field("is_input", flag(b.is_input));
        });
      });
    });
    o.field("aliased_io", [&](JsonWriter& a) {
      a.array(metadata.aliased_io, [](JsonWriter& e, const AliasedIo& alias) {
        e.object([&](JsonWriter& m) {
          m.field("output", text(alias.output));
          m.field("input", text(alias.input));
          m.field("kind", text(alias.kind));
        });
      });
    });
    o.field("hardware_compatible", flag(metadata.hardware_compatible));
    o.field("device_id", number(metadata.device_id));
    o.field("serialized_metadata", text(metadata.serialized_metadata));
    o.field("target_platform", text(metadata.target_platform));
    // Appended after upstream's keys, and only when present, so a blob without
    // a signature is byte-identical to what Torch-TensorRT writes.
    if (metadata.profile_signature)
      o.field("profile_signature", [&](JsonWriter& s) { write_signature(s, *metadata.profile_signature); });
    // Last of all, and only when there is delegate-owned state: readers that find scalar keys by searching the text
    // after the arrays (upstream's first C++ reader) find the real ones first.
    if (!metadata.delegate_state.empty())
      o.field("delegate_state", [&](JsonWriter& a) {
        a.array(metadata.delegate_state, [](JsonWriter& e, const DelegateState& s) {
          e.object([&](JsonWriter& m) {
            m.field("name", text(s.name));
            m.field("input", text(s.input));
            m.field("output", text(s.output));
            m.field("initial_value", text(s.initial_value));
          });
        });
      });
  });
  return out;
}

}  // namespace etrt::blob
