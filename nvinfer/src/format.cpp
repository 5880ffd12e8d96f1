#include "format.h"

#include <cstring>

namespace etrt::gpufree {

namespace {

constexpr uint8_t kFlagTracing = 1;
constexpr uint8_t kFlagDevice = 2;
constexpr uint8_t kFlagStreamableWeights = 4;
constexpr uint8_t kFlagExclusiveProfiles = 8;
constexpr uint8_t kKnownFlags = kFlagTracing | kFlagDevice | kFlagStreamableWeights | kFlagExclusiveProfiles;

class Writer {
 public:
  void u8(uint8_t v) { bytes_.push_back(v); }
  void u32(uint32_t v) { le(v, 4); }
  void u64(uint64_t v) { le(v, 8); }
  void i32(int32_t v) { le(static_cast<uint32_t>(v), 4); }
  void i64(int64_t v) { le(static_cast<uint64_t>(v), 8); }
  void f32(float v) {
    uint32_t bits = 0;
    std::memcpy(&bits, &v, 4);
    u32(bits);
  }
  void str(const std::string& s) {
    u32(static_cast<uint32_t>(s.size()));
    bytes_.insert(bytes_.end(), s.begin(), s.end());
  }
  void shape(const Shape& s) {
    u8(static_cast<uint8_t>(s.rank));
    for (int32_t i = 0; i < s.rank; ++i) i64(s.d[i]);
  }
  std::vector<uint8_t>& bytes() { return bytes_; }

 private:
  // Byte by byte, so the encoding is little-endian whatever the host is.
  void le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) bytes_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  std::vector<uint8_t> bytes_;
};

// Every read checks the bytes left first; the first failure sticks and later reads return zeros, so the decoder
// can read a whole record and check ok() once.
class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  size_t remaining() const { return size_ - pos_; }
  size_t position() const { return pos_; }

  uint8_t u8() { return static_cast<uint8_t>(le(1, "a byte")); }
  uint32_t u32() { return static_cast<uint32_t>(le(4, "a u32")); }
  uint64_t u64() { return le(8, "a u64"); }
  int32_t i32() { return static_cast<int32_t>(u32()); }
  int64_t i64() { return static_cast<int64_t>(u64()); }
  float f32() {
    uint32_t bits = u32();
    float v = 0;
    std::memcpy(&v, &bits, 4);
    return v;
  }
  // Refused above kMaxNameLength before anything is allocated for it.
  std::string str(const char* what) {
    uint32_t n = u32();
    if (ok_ && n > kMaxNameLength)
      return failed(std::string(), std::string(what) + " is " + std::to_string(n) + " bytes long, above the limit of " +
                                       std::to_string(kMaxNameLength));
    if (!need(n, what)) return {};
    std::string s(reinterpret_cast<const char*>(data_ + pos_), n);
    pos_ += n;
    return s;
  }
  Shape shape(const char* what) {
    Shape s;
    uint8_t rank = u8();
    if (ok_ && rank > kMaxRank)
      return failed(s, std::string(what) + " has rank " + std::to_string(rank) + ", above the maximum " +
                           std::to_string(kMaxRank));
    for (uint8_t i = 0; i < rank && ok_; ++i) s.d[s.rank++] = i64();
    return s;
  }
  // A count of records each at least `min_record` bytes long, refused above `limit` and if the bytes cannot hold
  // that many, so a corrupted count never turns into a huge allocation.
  uint32_t count(size_t min_record, size_t limit, const char* what) {
    uint32_t n = u32();
    if (ok_ && n > limit)
      return failed(uint32_t{0}, std::string("the ") + what + " count " + std::to_string(n) +
                                     " is above the limit of " + std::to_string(limit));
    if (ok_ && static_cast<uint64_t>(n) * min_record > remaining())
      return failed(uint32_t{0}, std::string("the ") + what + " count " + std::to_string(n) + " needs at least " +
                                     std::to_string(static_cast<uint64_t>(n) * min_record) + " more bytes, only " +
                                     std::to_string(remaining()) + " remain");
    return ok_ ? n : 0;
  }
  template <typename T>
  T failed(T value, std::string message) {
    if (ok_) {
      ok_ = false;
      error_ = std::move(message);
    }
    return value;
  }

 private:
  bool need(size_t n, const char* what) {
    if (!ok_) return false;
    if (n > remaining()) {
      failed(0, std::string("truncated: ") + what + " needs " + std::to_string(n) + " bytes at payload offset " +
                    std::to_string(pos_) + ", only " + std::to_string(remaining()) + " remain");
      return false;
    }
    return true;
  }
  uint64_t le(size_t n, const char* what) {
    if (!need(n, what)) return 0;
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(data_[pos_ + i]) << (8 * i);
    pos_ += n;
    return v;
  }

  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  bool ok_ = true;
  std::string error_;
};

uint32_t read_u32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 | static_cast<uint32_t>(p[2]) << 16 |
         static_cast<uint32_t>(p[3]) << 24;
}

uint64_t read_u64(const uint8_t* p) { return static_cast<uint64_t>(read_u32(p)) | uint64_t{read_u32(p + 4)} << 32; }

bool fail(std::string* error, std::string message) {
  if (error != nullptr) *error = "GPU-free NvInfer engine: " + std::move(message);
  return false;
}

bool valid_dtype(uint8_t v) { return v <= static_cast<uint8_t>(DataType::kBool); }

bool decode_payload(Reader& r, Model* m) {
  m->label = r.str("the label");
  uint8_t flags = r.u8();
  if (r.ok() && (flags & ~kKnownFlags) != 0) return r.failed(false, "unknown flags " + std::to_string(flags));
  m->tracing = (flags & kFlagTracing) != 0;
  m->memory_kind = (flags & kFlagDevice) != 0 ? MemoryKind::kDevice : MemoryKind::kHost;
  m->streamable_weights = (flags & kFlagStreamableWeights) != 0;
  m->exclusive_profiles = (flags & kFlagExclusiveProfiles) != 0;
  m->switch_cost_ns = r.i64();
  m->requested_device_memory = r.u64();

  // Minimal record sizes: name length + the fixed fields + a rank byte.
  uint32_t n_io = r.count(4 + 3 + 1, kMaxIoTensors, "IO tensor");
  m->io.resize(n_io);
  for (TensorDesc& t : m->io) {
    t.name = r.str("an IO tensor name");
    t.is_input = r.u8() != 0;
    const uint8_t io_flags = r.u8();
    if (r.ok() && (io_flags & ~uint8_t{7}) != 0)
      return r.failed(false,
                      "IO tensor '" + escape_name(t.name) + "' has unknown io_flags " + std::to_string(io_flags));
    t.is_shape_tensor = (io_flags & 1) != 0;
    t.on_host = (io_flags & 2) != 0;
    t.data_dependent = (io_flags & 4) != 0;
    uint8_t dtype = r.u8();
    if (r.ok() && !valid_dtype(dtype))
      return r.failed(false, "IO tensor '" + escape_name(t.name) + "' has unknown dtype " + std::to_string(dtype));
    t.dtype = static_cast<DataType>(dtype);
    t.shape = r.shape("an IO tensor shape");
    if (!r.ok()) return false;
  }

  uint32_t n_const = r.count(4 + 1 + 8, kMaxConstants, "constant");
  m->constants.resize(n_const);
  for (Constant& c : m->constants) {
    c.name = r.str("a constant name");
    c.shape = r.shape("a constant shape");
    uint64_t n = r.u64();
    if (r.ok() && n > r.remaining() / 4)
      return r.failed(false, "constant '" + escape_name(c.name) + "' claims " + std::to_string(n) + " values, only " +
                                 std::to_string(r.remaining() / 4) + " fit in the remaining bytes");
    if (!r.ok()) return false;
    c.values.resize(static_cast<size_t>(n));
    for (float& v : c.values) v = r.f32();
  }

  uint32_t n_inter = r.count(4 + 1, kMaxIntermediates, "intermediate");
  m->intermediates.resize(n_inter);
  for (Intermediate& t : m->intermediates) {
    t.name = r.str("an intermediate name");
    uint8_t dtype = r.u8();
    if (r.ok() && !valid_dtype(dtype))
      return r.failed(false, "intermediate '" + escape_name(t.name) + "' has unknown dtype " + std::to_string(dtype));
    t.dtype = static_cast<DataType>(dtype);
  }

  const size_t n_inputs = static_cast<size_t>(m->num_inputs());
  // A profile takes at least 3 rank bytes per input. One of an input-less engine takes none, so cap those.
  uint32_t n_profiles = r.count(3 * n_inputs, kMaxProfiles, "profile");
  if (r.ok() && n_inputs == 0 && n_profiles > 1) return r.failed(false, "an engine without inputs has one profile");
  if (r.ok() && static_cast<uint64_t>(n_profiles) * n_inputs > kMaxProfileEntries)
    return r.failed(false, std::to_string(n_profiles) + " profiles x " + std::to_string(n_inputs) +
                               " inputs = " + std::to_string(static_cast<uint64_t>(n_profiles) * n_inputs) +
                               " profile bounds, above the limit of " + std::to_string(kMaxProfileEntries));
  m->profiles.assign(n_profiles, std::vector<InputRange>(n_inputs));
  for (std::vector<InputRange>& profile : m->profiles) {
    for (InputRange& range : profile) {
      range.min = r.shape("a profile min shape");
      range.opt = r.shape("a profile opt shape");
      range.max = r.shape("a profile max shape");
    }
    if (!r.ok()) return false;
  }

  uint32_t n_ops = r.count(1 + 6 * 4, kMaxOps, "op");
  if (r.ok() && static_cast<uint64_t>(n_profiles) * n_ops > kMaxShapeInferenceWork)
    return r.failed(false, std::to_string(n_profiles) + " profiles x " + std::to_string(n_ops) +
                               " ops = " + std::to_string(static_cast<uint64_t>(n_profiles) * n_ops) +
                               " shape inferences per bound, above the limit of " +
                               std::to_string(kMaxShapeInferenceWork));
  m->ops.resize(n_ops);
  for (Op& op : m->ops) {
    op.kind = static_cast<OpKind>(r.u8());
    op.a = r.i32();
    op.b = r.i32();
    op.c = r.i32();
    op.d = r.i32();
    op.out = r.i32();
    op.factor = r.f32();
  }
  if (r.ok() && r.remaining() != 0)
    return r.failed(false, std::to_string(r.remaining()) + " unexpected bytes after the last op");
  return r.ok();
}

}  // namespace

uint32_t checksum(const uint8_t* data, size_t size) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < size; ++i) {
    h ^= data[i];
    h *= 16777619u;
  }
  return h;
}

bool is_gpufree_engine(const void* data, size_t size) {
  return data != nullptr && size >= sizeof(kMagic) && std::memcmp(data, kMagic, sizeof(kMagic)) == 0;
}

std::vector<uint8_t> serialize(const Model& m) {
  Writer w;
  w.str(m.label);
  w.u8(static_cast<uint8_t>((m.tracing ? kFlagTracing : 0) | (m.memory_kind == MemoryKind::kDevice ? kFlagDevice : 0) |
                            (m.streamable_weights ? kFlagStreamableWeights : 0) |
                            (m.exclusive_profiles ? kFlagExclusiveProfiles : 0)));
  w.i64(m.switch_cost_ns);
  w.u64(m.requested_device_memory);
  w.u32(static_cast<uint32_t>(m.io.size()));
  for (const TensorDesc& t : m.io) {
    w.str(t.name);
    w.u8(t.is_input ? 1 : 0);
    w.u8(static_cast<uint8_t>((t.is_shape_tensor ? 1 : 0) | (t.on_host ? 2 : 0) | (t.data_dependent ? 4 : 0)));
    w.u8(static_cast<uint8_t>(t.dtype));
    w.shape(t.shape);
  }
  w.u32(static_cast<uint32_t>(m.constants.size()));
  for (const Constant& c : m.constants) {
    w.str(c.name);
    w.shape(c.shape);
    w.u64(c.values.size());
    for (float v : c.values) w.f32(v);
  }
  w.u32(static_cast<uint32_t>(m.intermediates.size()));
  for (const Intermediate& t : m.intermediates) {
    w.str(t.name);
    w.u8(static_cast<uint8_t>(t.dtype));
  }
  w.u32(static_cast<uint32_t>(m.profiles.size()));
  for (const std::vector<InputRange>& profile : m.profiles) {
    for (const InputRange& range : profile) {
      w.shape(range.min);
      w.shape(range.opt);
      w.shape(range.max);
    }
  }
  w.u32(static_cast<uint32_t>(m.ops.size()));
  for (const Op& op : m.ops) {
    w.u8(static_cast<uint8_t>(op.kind));
    w.i32(op.a);
    w.i32(op.b);
    w.i32(op.c);
    w.i32(op.d);
    w.i32(op.out);
    w.f32(op.factor);
  }
  const std::vector<uint8_t>& payload = w.bytes();

  Writer out;
  for (char c : kMagic) out.u8(static_cast<uint8_t>(c));
  out.u32(kFormatVersion);
  out.u64(payload.size());
  out.u32(checksum(payload.data(), payload.size()));
  out.u32(0);
  out.bytes().insert(out.bytes().end(), payload.begin(), payload.end());
  return std::move(out.bytes());
}

bool deserialize_model(const void* data, size_t size, Model* model, std::string* error) {
  if (data == nullptr && size > 0) return fail(error, "no engine bytes (null pointer)");
  const auto* bytes = static_cast<const uint8_t*>(data);
  if (!is_gpufree_engine(data, size))
    return fail(error, "these bytes are not an engine of the GPU-free NvInfer implementation (they do not start with "
                       "its magic 'ETRF'); a TensorRT plan runs on NVIDIA's TensorRT: rebuild etrt with "
                       "-DTENSORRT_ROOT=<TensorRT installation> -DETRT_WITH_CUDA=ON");
  if (size < kHeaderSize)
    return fail(error,
                "truncated: " + std::to_string(size) + " bytes, the header alone is " + std::to_string(kHeaderSize));
  const uint32_t version = read_u32(bytes + 4);
  if (version != kFormatVersion)
    return fail(error, "format version " + std::to_string(version) + " is not the version this etrt reads (" +
                           std::to_string(kFormatVersion) + "); rebuild the engine with this etrt's builder");
  const uint64_t payload_size = read_u64(bytes + 8);
  if (payload_size != size - kHeaderSize)
    return fail(error, "the header promises a " + std::to_string(payload_size) + "-byte payload but " +
                           std::to_string(size - kHeaderSize) + " bytes follow it (truncated or padded blob)");
  const uint32_t expected = read_u32(bytes + 16);
  const uint32_t actual = checksum(bytes + kHeaderSize, size - kHeaderSize);
  if (expected != actual)
    return fail(error, "checksum mismatch (header " + std::to_string(expected) + ", payload " + std::to_string(actual) +
                           "): the engine bytes are damaged");
  if (read_u32(bytes + 20) != 0) return fail(error, "reserved header bytes are not zero");

  Model m;
  Reader r(bytes + kHeaderSize, size - kHeaderSize);
  if (!decode_payload(r, &m)) return fail(error, r.error());
  std::string why;
  if (!validate(m, &why)) return fail(error, "invalid engine: " + why);
  m.build_indexes();
  *model = std::move(m);
  return true;
}

}  // namespace etrt::gpufree
