// h5_headers.cpp — the byte-level check of h5_headers.h: the superblock, then every object header
// from the root group, message by message, as the HDF5 file format specification (version 3.0)
// lays them out and libhdf5 1.10 writes them.
#include "lib/io/h5_headers.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <deque>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "lib/base/error.h"
#include "lib/base/input_file.h"
#include "lib/io/checksum.h"

namespace sg::h5 {
namespace {

constexpr uint64_t kUndefined = ~uint64_t{0};  // HADDR_UNDEF
constexpr unsigned kMaxRank = 32;              // H5S_MAX_RANK
constexpr unsigned kMaxFilters = 32;           // H5Z_MAX_NFILTERS
constexpr int kMaxTypeDepth = 4;               // a variable-length string's base type, and no deeper
// A header chunk or continuation block larger than this is refused before it is read (sinkgate's
// are a few kB: attributes are small, and a group of more than 1,024 links goes dense).
constexpr uint64_t kMaxChunk = uint64_t{64} << 20;
const unsigned char kSignature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};

struct Refusal {
  std::string problem;
};

[[noreturn]] void refuse(std::string problem) { throw Refusal{std::move(problem)}; }

std::string number(uint64_t value) { return std::to_string(value); }

/// The file's bytes, read where a header lies.
class Bytes {
 public:
  Bytes(int descriptor, uint64_t size) : descriptor_(descriptor), size_(size) {}
  uint64_t size() const { return size_; }
  bool holds(uint64_t offset, uint64_t count) const { return offset <= size_ && count <= size_ - offset; }

  /// `count` bytes at `offset`; refuses a range past the end of the file, naming `what`.
  std::vector<uint8_t> read(uint64_t offset, uint64_t count, const std::string& what) const {
    if (!holds(offset, count))
      refuse(what + " lies past the end of the file (" + number(count) + " bytes at byte " + number(offset) + " of " +
             number(size_) + ")");
    std::vector<uint8_t> out(count);
    size_t done = 0;
    while (done < count) {
      const ssize_t n = pread(descriptor_, out.data() + done, count - done, static_cast<off_t>(offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) refuse(what + " cannot be read (" + (n < 0 ? std::string(std::strerror(errno)) : "end of file") + ")");
      done += static_cast<size_t>(n);
    }
    return out;
  }

  bool signature_at(uint64_t offset, const char* signature) const {
    if (!holds(offset, 4)) return false;
    char found[4];
    return pread(descriptor_, found, 4, static_cast<off_t>(offset)) == 4 && std::memcmp(found, signature, 4) == 0;
  }

 private:
  int descriptor_;
  uint64_t size_;
};

/// Reads the little-endian fields of one message (or block) in order, refusing any that runs
/// past its end.
class Cursor {
 public:
  Cursor(const uint8_t* data, uint64_t size, std::string what) : data_(data), size_(size), what_(std::move(what)) {}
  const std::string& what() const { return what_; }
  uint64_t left() const { return size_ - at_; }

  void need(uint64_t count) const {
    if (count > left())
      refuse(what_ + " runs past its end (" + number(at_ + count) + " bytes needed, " + number(size_) + " there)");
  }
  uint64_t take(unsigned width) {
    need(width);
    uint64_t value = 0;
    for (unsigned i = 0; i < width; ++i) value |= uint64_t{data_[at_ + i]} << (8 * i);
    at_ += width;
    return value;
  }
  unsigned byte() { return static_cast<unsigned>(take(1)); }
  const uint8_t* skip(uint64_t count) {
    need(count);
    const uint8_t* start = data_ + at_;
    at_ += count;
    return start;
  }
  /// The next `count` bytes as a cursor of their own, named `what`.
  Cursor part(uint64_t count, std::string what) {
    const uint8_t* start = skip(count);
    return Cursor(start, count, std::move(what));
  }
  void skip_to_multiple_of_8(uint64_t from) {  // version-1 attribute parts are padded so
    const uint64_t used = at_ - from;
    skip((8 - used % 8) % 8);
  }
  uint64_t at() const { return at_; }

 private:
  const uint8_t* data_;
  uint64_t size_;
  std::string what_;
  uint64_t at_ = 0;
};

const char* message_name(unsigned type) {
  switch (type) {
    case 0x00: return "NIL";
    case 0x01: return "dataspace";
    case 0x02: return "link info";
    case 0x03: return "datatype";
    case 0x04: return "fill value (old)";
    case 0x05: return "fill value";
    case 0x06: return "link";
    case 0x07: return "external data files";
    case 0x08: return "layout";
    case 0x09: return "bogus";
    case 0x0A: return "group info";
    case 0x0B: return "filter pipeline";
    case 0x0C: return "attribute";
    case 0x0D: return "object comment";
    case 0x0E: return "modification time (old)";
    case 0x0F: return "shared message table";
    case 0x10: return "continuation";
    case 0x11: return "symbol table";
    case 0x12: return "modification time";
    case 0x13: return "B-tree 'K' values";
    case 0x14: return "driver info";
    case 0x15: return "attribute info";
    case 0x16: return "reference count";
    default: return "unknown";
  }
}

const char* class_name(unsigned type_class) {
  static const char* names[] = {"integer", "float",    "time", "string",          "bitfield", "opaque",
                                "compound", "reference", "enum", "variable-length", "array"};
  return type_class < sizeof names / sizeof names[0] ? names[type_class] : "unknown";
}

/// `count` bytes of `from` at `offset` (within it).
std::vector<uint8_t> copy(const std::vector<uint8_t>& from, uint64_t offset, uint64_t count) {
  std::vector<uint8_t> out(count);
  if (count > 0) std::memcpy(out.data(), from.data() + offset, count);
  return out;
}

struct Message {
  unsigned type = 0;
  unsigned flags = 0;
  std::vector<uint8_t> body;
};

/// What one object's messages say about it, for the checks across messages.
struct Object {
  std::string name;         // its path, "the root group", or "the object header at byte N"
  int rank = -1;            // the dataspace's, -1 without one
  uint64_t element = 0;     // the datatype's size, 0 without one
  int chunk_rank = -1;      // a chunked layout's dimensionality (rank + 1), -1 otherwise
  uint64_t chunk_element = 0;
};

struct Shape {
  unsigned rank = 0;
  uint64_t count = 1;  // elements; 0 for a null dataspace
  bool overflow = false;
};

class Check {
 public:
  explicit Check(const Bytes& file) : file_(file) {}

  void run() {
    const uint64_t root = superblock();
    if (root == kUndefined) return;  // HDF5's oldest format: left to the library
    pending_.emplace_back(root, "/");
    drain();
    if (!dense_) return;
    // A dense group's links and a dense object's attributes live in a fractal heap; the headers
    // they lead to are found here by their signature and checksum.
    const std::vector<uint64_t> found = scan_headers();
    for (uint64_t address : found) pending_.emplace_back(address, "");
    drain();
  }

 private:
  void drain() {
    while (!pending_.empty()) {
      auto [address, path] = pending_.front();
      pending_.pop_front();
      header(address, path);
    }
  }

  /// Checks the superblock; returns the root group's header address, or kUndefined for a
  /// superblock of version 0 or 1.
  uint64_t superblock() {
    if (!file_.holds(0, 9)) refuse("the file is shorter than an HDF5 superblock");
    const auto start = file_.read(0, 9, "the superblock");
    if (std::memcmp(start.data(), kSignature, 8) != 0)
      refuse("the HDF5 signature is not at byte 0 (a user block, which sinkgate never writes)");
    const unsigned version = start[8];
    if (version < 2) return kUndefined;
    if (version > 3) refuse("the superblock is of version " + number(version) + " (sinkgate writes version 3)");
    const auto block = file_.read(0, 48, "the superblock");
    if (!sealed(block)) refuse("the superblock fails its checksum (damaged)");
    Cursor c(block.data() + 9, 35, "the superblock");
    const unsigned offsets = c.byte(), lengths = c.byte();
    if (offsets != 8 || lengths != 8)
      refuse("the superblock gives addresses of " + number(offsets) + " and lengths of " + number(lengths) +
             " bytes (sinkgate writes 8 and 8)");
    c.byte();  // file consistency flags
    const uint64_t base = c.take(8), extension = c.take(8), end = c.take(8), root = c.take(8);
    if (base != 0) refuse("the superblock gives a base address of " + number(base) + " (sinkgate writes 0)");
    if (extension != kUndefined)
      refuse("the superblock has an extension (at byte " + number(extension) + "), which sinkgate never writes");
    if (end > file_.size())
      refuse("the file is truncated: its superblock ends it at byte " + number(end) + ", but it has " +
             number(file_.size()) + " bytes");
    return root;
  }

  std::string object_name(const std::string& path, uint64_t address) const {
    if (path.empty()) return "the object header at byte " + number(address);
    return path == "/" ? "the root group" : path;
  }

  /// Reads one object header (version 2, "OHDR", or version 1) with its continuation blocks, then
  /// checks each message and the messages together.
  void header(uint64_t address, const std::string& path) {
    if (!headers_.insert(address).second) return;  // a second hard link to it, or a cycle
    Object object;
    object.name = object_name(path, address);
    std::vector<Message> messages;
    if (file_.signature_at(address, "OHDR"))
      header_v2(address, object.name, messages);
    else
      header_v1(address, object.name, messages);
    for (auto& message : messages) check_message(message, object, path);
    if (object.chunk_rank >= 0) {
      if (object.rank < 0 || object.chunk_rank != object.rank + 1)
        refuse(object.name + "'s layout message has chunks of " + number(object.chunk_rank - 1) +
               " dimensions for a dataset of " + (object.rank < 0 ? std::string("no dataspace") : number(object.rank)));
      if (object.element == 0 || object.chunk_element != object.element)
        refuse(object.name + "'s layout message gives an element of " + number(object.chunk_element) +
               " bytes for a datatype of " + number(object.element));
    }
  }

  /// A version-2 header's first chunk as read: its bytes (checksum last), where its messages
  /// begin, and the header's flags.
  struct ChunkZero {
    std::vector<uint8_t> block;
    uint64_t messages_from = 0;
    unsigned flags = 0;
  };

  /// Reads the version-2 header at `address` whole, its prefix checked (the checksum is not).
  ChunkZero read_v2(uint64_t address, const std::string& what) const {
    const auto prefix = file_.read(address, 6, what);
    Cursor p(prefix.data() + 4, 2, what);
    ChunkZero chunk;
    const unsigned version = p.byte();
    chunk.flags = p.byte();
    if (version != 2) refuse(what + " is of version " + number(version) + " (2 expected after 'OHDR')");
    if (chunk.flags & 0xC0) refuse(what + " has flags " + number(chunk.flags) + " (bits 6 and 7 are reserved)");
    const unsigned width = 1u << (chunk.flags & 3);
    const uint64_t fields = 6 + ((chunk.flags & 0x20) ? 16 : 0) + ((chunk.flags & 0x10) ? 4 : 0);
    const auto head = file_.read(address, fields + width, what);
    const uint64_t size = Cursor(head.data() + fields, width, what).take(width);
    if (size > file_.size() || !file_.holds(address, fields + width + size + 4))
      refuse(what + " lies past the end of the file (" + number(size) + " bytes of messages)");
    if (size > kMaxChunk) refuse(what + " holds " + number(size) + " bytes of messages (sinkgate's hold under 64 MiB)");
    chunk.block = file_.read(address, fields + width + size + 4, what);
    chunk.messages_from = fields + width;
    return chunk;
  }

  void header_v2(uint64_t address, const std::string& name, std::vector<Message>& messages) {
    const std::string what = name + "'s object header (at byte " + number(address) + ")";
    const ChunkZero zero = read_v2(address, what);
    const auto& block = zero.block;
    if (!sealed(block)) refuse(what + " fails its checksum (damaged)");
    const bool order = zero.flags & 0x04;
    std::deque<std::pair<uint64_t, uint64_t>> continuations;
    parse_v2(block, zero.messages_from, block.size() - 4, address, order, what, messages, continuations);
    while (!continuations.empty()) {
      auto [at, length] = continuations.front();
      continuations.pop_front();
      const std::string part = name + "'s continuation block (at byte " + number(at) + ")";
      if (!continuations_.insert(at).second) refuse(part + " is named twice");
      if (length < 8) refuse(part + " is " + number(length) + " bytes long, too short for its signature and checksum");
      if (length > kMaxChunk) refuse(part + " is " + number(length) + " bytes long (sinkgate's are under 64 MiB)");
      if (!file_.signature_at(at, "OCHK")) refuse(part + " does not begin with 'OCHK'");
      const auto chunk = file_.read(at, length, part);
      if (!sealed(chunk)) refuse(part + " fails its checksum (damaged)");
      parse_v2(chunk, 4, chunk.size() - 4, at, order, part, messages, continuations);
    }
  }

  /// The messages of a version-2 chunk in [from, to) of `block` (at `address` in the file).
  void parse_v2(const std::vector<uint8_t>& block, uint64_t from, uint64_t to, uint64_t address, bool order,
                const std::string& what, std::vector<Message>& messages,
                std::deque<std::pair<uint64_t, uint64_t>>& continuations) {
    const uint64_t head = order ? 6 : 4;
    uint64_t at = from;
    while (to - at >= head) {  // a gap shorter than a message's header may end the chunk
      Cursor c(block.data() + at, to - at, what);
      Message message;
      message.type = c.byte();
      const uint64_t size = c.take(2);
      message.flags = c.byte();
      if (order) c.take(2);
      if (size > c.left())
        refuse(what + ": the " + std::string(message_name(message.type)) + " message at byte " + number(address + at) + " runs past its chunk");
      message.body = copy(block, at + head, size);
      at += head + size;
      note_continuation(message, what, continuations);
      messages.push_back(std::move(message));
    }
  }

  void header_v1(uint64_t address, const std::string& name, std::vector<Message>& messages) {
    const std::string what = name + "'s object header (at byte " + number(address) + ")";
    const auto prefix = file_.read(address, 16, what);
    Cursor p(prefix.data(), 16, what);
    const unsigned version = p.byte();
    if (version != 1)
      refuse(name + " has no object header at byte " + number(address) + " (neither 'OHDR' nor a version-1 header is there)");
    p.byte();
    p.take(2);  // number of messages (libhdf5 tolerates a miscount; the bytes bound the walk)
    p.take(4);  // reference count
    const uint64_t size = p.take(4);
    std::deque<std::pair<uint64_t, uint64_t>> chunks{{address + 16, size}};
    bool first = true;
    while (!chunks.empty()) {
      auto [at, length] = chunks.front();
      chunks.pop_front();
      const std::string part = first ? what : name + "'s continuation block (at byte " + number(at) + ")";
      if (!first && !continuations_.insert(at).second) refuse(part + " is named twice");
      if (length > kMaxChunk) refuse(part + " is " + number(length) + " bytes long (sinkgate's are under 64 MiB)");
      first = false;
      const auto chunk = file_.read(at, length, part);
      uint64_t offset = 0;
      while (chunk.size() - offset >= 8) {
        Cursor c(chunk.data() + offset, chunk.size() - offset, part);
        Message message;
        message.type = static_cast<unsigned>(c.take(2));
        const uint64_t body = c.take(2);
        message.flags = c.byte();
        c.skip(3);
        if (message.type > 0xFF) refuse(part + " has a message of type " + number(message.type));
        if (body > c.left())
          refuse(part + ": the " + std::string(message_name(message.type)) + " message at byte " + number(at + offset) + " runs past its chunk");
        message.body = copy(chunk, offset + 8, body);
        offset += 8 + body;
        note_continuation(message, part, chunks);
        messages.push_back(std::move(message));
      }
    }
  }

  void note_continuation(const Message& message, const std::string& what,
                         std::deque<std::pair<uint64_t, uint64_t>>& continuations) {
    if (message.type != 0x10) return;
    Cursor c(message.body.data(), message.body.size(), what + ": a continuation message");
    const uint64_t at = c.take(8), length = c.take(8);
    if (!file_.holds(at, length))
      refuse(what + ": a continuation message names " + number(length) + " bytes at byte " + number(at) +
             ", past the end of the file");
    continuations.emplace_back(at, length);
  }

  /// Whether a block ends with the lookup3 of the rest (HDF5's metadata checksum).
  static bool sealed(const std::vector<uint8_t>& block) {
    return block.size() >= 4 &&
           lookup3(block.data(), block.size() - 4) == Cursor(block.data() + block.size() - 4, 4, "").take(4);
  }

  /// Refuses unless a block with `signature` begins at `address`.
  void block_at(uint64_t address, const char* signature, const std::string& what) const {
    if (!file_.signature_at(address, signature))
      refuse(what + " points at byte " + number(address) + ", where no '" + signature + "' block begins");
  }

  // --- the messages --------------------------------------------------------------------------

  void check_message(const Message& message, Object& object, const std::string& path) {
    const std::string what = object.name + "'s " + message_name(message.type) + " message";
    if (message.flags & 0x02)
      refuse(what + " is marked shared (stored in a shared-message table, which sinkgate files never have)");
    Cursor c(message.body.data(), message.body.size(), what);
    switch (message.type) {
      case 0x00:  // NIL: free space
      case 0x10:  // continuation: read with the header
        return;
      case 0x01: {
        const Shape shape = dataspace(c);
        object.rank = static_cast<int>(shape.rank);
        return;
      }
      case 0x02:
        return storage_info(c, /*creation_index=*/8);
      case 0x03:
        object.element = datatype(c, 0, object.name);
        return;
      case 0x04:
        c.skip(c.take(4));
        return;
      case 0x05:
        return fill_value(c);
      case 0x06:
        return link(c, path);
      case 0x07:
        refuse(object.name + " is a dataset with external raw-data storage (its data would be read from other files)");
      case 0x08:
        return layout(c, object);
      case 0x0A:
        return group_info(c);
      case 0x0B:
        return filters(c);
      case 0x0C:
        return attribute(c, object.name);
      case 0x11:
        refuse(object.name + " is a group of HDF5's oldest format (a symbol table, without checksums), which sinkgate never writes");
      case 0x12:
        if (c.byte() != 1) refuse(what + " is not of version 1");
        c.skip(7);
        return;
      case 0x15:
        return storage_info(c, /*creation_index=*/2);
      case 0x16:
        if (c.byte() != 0) refuse(what + " is not of version 0");
        c.take(4);
        return;
      default:
        refuse(object.name + " has a header message of type " + number(message.type) + " (" + message_name(message.type) +
               "), which sinkgate never writes");
    }
  }

  Shape dataspace(Cursor& c) {
    const unsigned version = c.byte();
    Shape shape;
    shape.rank = c.byte();
    const unsigned flags = c.byte();
    if (version != 1 && version != 2) refuse(c.what() + " is of version " + number(version) + " (1 or 2 expected)");
    if (shape.rank > kMaxRank) refuse(c.what() + " has " + number(shape.rank) + " dimensions (HDF5 allows 32)");
    if (flags & ~1u) refuse(c.what() + " has flags " + number(flags) + " (sinkgate writes only the maximum-dimensions bit)");
    bool null = false;
    if (version == 1) {
      c.skip(5);
    } else {
      const unsigned kind = c.byte();
      if (kind > 2) refuse(c.what() + " is of class " + number(kind) + " (scalar, simple or null expected)");
      if (kind != 1 && shape.rank != 0) refuse(c.what() + " is scalar or null with " + number(shape.rank) + " dimensions");
      null = kind == 2;
    }
    for (unsigned i = 0; i < shape.rank; ++i) {
      const uint64_t dim = c.take(8);
      if (dim != 0 && shape.count > kUndefined / dim) shape.overflow = true;
      shape.count = shape.overflow ? kUndefined : shape.count * dim;
    }
    if (flags & 1) c.skip(8 * uint64_t{shape.rank});
    if (null) shape.count = 0;
    return shape;
  }

  /// Checks one datatype (depth > 0: a variable-length string's base type); returns its size.
  uint64_t datatype(Cursor& c, int depth, const std::string& owner) {
    const unsigned head = c.byte();
    const unsigned version = head >> 4, type_class = head & 0x0F;
    const uint64_t bits = c.take(3), size = c.take(4);
    if (version < 1 || version > 3) refuse(c.what() + " is of version " + number(version) + " (1 to 3 expected)");
    switch (type_class) {
      case 0: {
        const uint64_t offset = c.take(2), precision = c.take(2);
        if (bits & ~uint64_t{0x0F}) refuse(c.what() + " gives an integer the class bits " + number(bits));
        if (size == 0 || size > 16 || precision == 0 || offset + precision > 8 * size)
          refuse(c.what() + " gives an integer of " + number(size) + " bytes a precision of " + number(precision) +
                 " bits at bit " + number(offset));
        return size;
      }
      case 1: {
        const uint64_t offset = c.take(2), precision = c.take(2);
        const uint64_t exponent_at = c.byte(), exponent_bits = c.byte(), mantissa_at = c.byte(), mantissa_bits = c.byte();
        c.take(4);  // exponent bias
        const uint64_t sign_at = (bits >> 8) & 0xFF;
        if (bits & ~uint64_t{0xFF7F}) refuse(c.what() + " gives a float the class bits " + number(bits));
        if (size == 0 || size > 16 || precision == 0 || offset + precision > 8 * size || exponent_bits == 0 ||
            mantissa_bits == 0 || exponent_at + exponent_bits > precision || mantissa_at + mantissa_bits > precision ||
            sign_at >= precision)
          refuse(c.what() + " gives a float of " + number(size) + " bytes fields outside its " + number(precision) + " bits");
        return size;
      }
      case 3:
        if (size == 0 || (bits & 0x0F) > 2 || ((bits >> 4) & 0x0F) > 1 || (bits >> 8) != 0)
          refuse(c.what() + " gives a string of " + number(size) + " bytes the class bits " + number(bits));
        return size;
      case 9: {
        if (depth >= kMaxTypeDepth) refuse(c.what() + " nests types deeper than sinkgate writes");
        if ((bits & 0x0F) != 1) refuse(owner + " has a variable-length sequence type (sinkgate writes integers, floats and strings)");
        if (((bits >> 4) & 0x0F) > 2 || ((bits >> 8) & 0x0F) > 1 || (bits >> 12) != 0)
          refuse(c.what() + " gives a variable-length string the class bits " + number(bits));
        datatype(c, depth + 1, owner);
        return 16;  // as stored: a length (4 bytes) and a global-heap reference (8 + 4), whatever `size` says
      }
      default:
        refuse(owner + " has " + (type_class == 1 || type_class == 8 || type_class == 10 ? "an " : "a ") +
               class_name(type_class) + " type (sinkgate writes integers, floats and strings)");
    }
  }

  void fill_value(Cursor& c) {
    const unsigned version = c.byte();
    if (version == 1 || version == 2) {
      c.skip(2);  // allocation and write times
      const unsigned defined = c.byte();
      if (version == 1 || defined) c.skip(c.take(4));
    } else if (version == 3) {
      const unsigned flags = c.byte();
      if (flags & 0xC0) refuse(c.what() + " has flags " + number(flags) + " (bits 6 and 7 are reserved)");
      if (flags & 0x20) c.skip(c.take(4));
    } else {
      refuse(c.what() + " is of version " + number(version) + " (1 to 3 expected)");
    }
  }

  void link(Cursor& c, const std::string& path) {
    const unsigned version = c.byte(), flags = c.byte();
    if (version != 1) refuse(c.what() + " is of version " + number(version) + " (1 expected)");
    if (flags & 0xE0) refuse(c.what() + " has flags " + number(flags) + " (bits 5 to 7 are reserved)");
    const unsigned type = (flags & 0x08) ? c.byte() : 0;
    if (type >= 2 && type < 64) refuse(c.what() + " is of link type " + number(type) + " (not hard, soft, external or user-defined)");
    if (flags & 0x04) c.take(8);  // creation order
    if ((flags & 0x10) && c.byte() > 1) refuse(c.what() + " names a character set other than ASCII and UTF-8");
    const uint64_t length = c.take(1u << (flags & 3));
    if (length == 0) refuse(c.what() + " has an empty name");
    const uint8_t* text = c.skip(length);
    const std::string name(reinterpret_cast<const char*>(text), length);
    if (type != 0) {  // soft, external or user-defined: the walk through the API refuses it by name
      c.skip(c.take(2));
      return;
    }
    const uint64_t address = c.take(8);
    const std::string child = (path.empty() ? std::string("(a member of a dense group)") : path == "/" ? "" : path) + "/" + name;
    if (address >= file_.size()) refuse(c.what() + " links '" + name + "' to byte " + number(address) + ", past the end of the file");
    pending_.emplace_back(address, child);
  }

  /// A link-info or attribute-info message: its flags, and when it names a fractal heap (dense
  /// storage), that heap and the B-trees indexing it. `creation_index` is the width of its maximum
  /// creation index (8 bytes for links, 2 for attributes).
  void storage_info(Cursor& c, unsigned creation_index) {
    const unsigned version = c.byte(), flags = c.byte();
    if (version != 0) refuse(c.what() + " is of version " + number(version) + " (0 expected)");
    if (flags & ~3u) refuse(c.what() + " has flags " + number(flags) + " (bits 2 to 7 are reserved)");
    if (flags & 1) c.take(creation_index);
    const uint64_t heap = c.take(8), names = c.take(8);
    const uint64_t order = (flags & 2) ? c.take(8) : kUndefined;
    if (heap == kUndefined) return;  // compact: the links or attributes are messages of this header
    dense_ = true;
    block_at(heap, "FRHP", c.what() + "'s heap address");
    block_at(names, "BTHD", c.what() + "'s name index");
    if (flags & 2) block_at(order, "BTHD", c.what() + "'s creation-order index");
  }

  void group_info(Cursor& c) {
    const unsigned version = c.byte(), flags = c.byte();
    if (version != 0) refuse(c.what() + " is of version " + number(version) + " (0 expected)");
    if (flags & ~3u) refuse(c.what() + " has flags " + number(flags) + " (bits 2 to 7 are reserved)");
    if (flags & 1) c.skip(4);  // link phase change
    if (flags & 2) c.skip(4);  // estimated entries
  }

  void layout(Cursor& c, Object& object) {
    const unsigned version = c.byte(), layout_class = c.byte();
    if (version != 3 && version != 4)
      refuse(c.what() + " is of version " + number(version) + " (3 or 4 expected; 1 and 2 are HDF5 1.6's)");
    switch (layout_class) {
      case 0:
        c.skip(c.take(2));
        return;
      case 1: {
        const uint64_t address = c.take(8), size = c.take(8);
        if (address != kUndefined && !file_.holds(address, size))
          refuse(c.what() + " stores " + number(size) + " bytes at byte " + number(address) + ", past the end of the file");
        return;
      }
      case 2:
        break;
      case 3:
        refuse(object.name + " is a virtual dataset (its data would come from other datasets or files)");
      default:
        refuse(c.what() + " is of class " + number(layout_class) + " (compact, contiguous or chunked expected)");
    }
    unsigned flags = 0, rank = 0, width = 4, index = 0;
    uint64_t address = kUndefined;
    if (version == 3) {
      rank = c.byte();
      address = c.take(8);
    } else {
      flags = c.byte();
      rank = c.byte();
      width = c.byte();
      if (flags & ~3u) refuse(c.what() + " has chunk flags " + number(flags) + " (bits 2 to 7 are reserved)");
      if (width == 0 || width > 8) refuse(c.what() + " encodes chunk dimensions in " + number(width) + " bytes");
    }
    if (rank < 2 || rank > kMaxRank + 1)
      refuse(c.what() + " has chunks of dimensionality " + number(rank) + " (2 to 33: the dataset's rank and its element)");
    uint64_t bytes = 1;
    for (unsigned i = 0; i < rank; ++i) {
      const uint64_t dim = c.take(width);
      if (dim == 0 || dim > 0xFFFFFFFFu) refuse(c.what() + " has a chunk dimension of " + number(dim));
      bytes *= dim;  // each factor under 2^32, the product checked at every step
      if (bytes > 0xFFFFFFFFu) refuse(c.what() + " has chunks of more than 4 GiB (HDF5's bound)");
      if (i + 1 == rank) object.chunk_element = dim;
    }
    object.chunk_rank = static_cast<int>(rank);
    const char* signature = version == 3 ? "TREE" : nullptr;
    if (version == 4) {
      index = c.byte();
      switch (index) {
        case 1:  // a single chunk
          if (flags & 2) c.skip(12);
          break;
        case 2:  // implicit
          break;
        case 3:
          if (c.byte() == 0) refuse(c.what() + " gives its fixed-array index no page size");
          signature = "FAHD";
          break;
        case 4:
          for (int i = 0; i < 5; ++i)
            if (c.byte() == 0) refuse(c.what() + " gives its extensible-array index a parameter of 0");
          signature = "EAHD";
          break;
        case 5:
          c.skip(6);
          signature = "BTHD";
          break;
        default:
          refuse(c.what() + " has a chunk index of type " + number(index) + " (1 to 5 expected in version 4)");
      }
      address = c.take(8);
    }
    if (address == kUndefined) return;  // no chunk written: the walk refuses the hole
    if (address >= file_.size())
      refuse(c.what() + " places its chunk index at byte " + number(address) + ", past the end of the file");
    if (signature) block_at(address, signature, c.what() + "'s chunk index");
  }

  void filters(Cursor& c) {
    const unsigned version = c.byte(), count = c.byte();
    if (version != 1 && version != 2) refuse(c.what() + " is of version " + number(version) + " (1 or 2 expected)");
    if (count > kMaxFilters) refuse(c.what() + " lists " + number(count) + " filters (HDF5 allows 32)");
    if (version == 1) c.skip(6);
    for (unsigned i = 0; i < count; ++i) {
      const uint64_t id = c.take(2);
      const uint64_t name_length = (version == 1 || id >= 256) ? c.take(2) : 0;
      c.take(2);  // flags
      const uint64_t values = c.take(2);
      if (version == 1 && name_length % 8 != 0) refuse(c.what() + " pads a filter's name to " + number(name_length) + " bytes");
      c.skip(name_length);
      c.skip(4 * values);
      if (version == 1 && values % 2 == 1) c.skip(4);
    }
  }

  void attribute(Cursor& c, const std::string& owner) {
    const unsigned version = c.byte(), flags = c.byte();
    if (version < 1 || version > 3) refuse(c.what() + " is of version " + number(version) + " (1 to 3 expected)");
    if (version >= 2 && flags != 0)
      refuse(c.what() + " has flags " + number(flags) + " (a shared datatype or dataspace, which sinkgate never writes)");
    const uint64_t name_size = c.take(2), type_size = c.take(2), space_size = c.take(2);
    if (version == 3 && c.byte() > 1) refuse(c.what() + " names a character set other than ASCII and UTF-8");
    const uint64_t from = c.at();
    const uint8_t* text = c.skip(name_size);
    if (name_size < 2 || text[name_size - 1] != 0 || std::memchr(text, 0, name_size) != text + name_size - 1)
      refuse(c.what() + " has a name of " + number(name_size) + " bytes that is not one NUL-terminated string");
    const std::string name(reinterpret_cast<const char*>(text), name_size - 1);
    const std::string where = owner + "'s attribute '" + name + "'";
    if (version == 1) c.skip_to_multiple_of_8(from);
    const uint64_t type_from = c.at();
    Cursor type = c.part(type_size, where + ": its datatype");
    const uint64_t element = datatype(type, 0, where);
    if (version == 1) c.skip_to_multiple_of_8(type_from);
    const uint64_t space_from = c.at();
    Cursor space = c.part(space_size, where + ": its dataspace");
    const Shape shape = dataspace(space);
    if (version == 1) c.skip_to_multiple_of_8(space_from);
    if (shape.overflow || (element != 0 && shape.count > c.left() / element))
      refuse(where + " holds " + (shape.overflow ? std::string("more") : number(shape.count)) + " elements of " +
             number(element) + " bytes, more than its message's " + number(c.left()) + " bytes left");
  }

  /// Every version-2 object header of the file (signature "OHDR" and a checksum that holds), for a
  /// file whose dense storage keeps some links or attributes out of reach of the walk above.
  std::vector<uint64_t> scan_headers() const {
    std::vector<uint64_t> found;
    constexpr uint64_t kPiece = uint64_t{1} << 20;
    for (uint64_t at = 0; at < file_.size(); at += kPiece) {
      const uint64_t count = std::min(kPiece + 3, file_.size() - at);
      const auto piece = file_.read(at, count, "the file");
      for (uint64_t i = 0; i + 4 <= piece.size() && i < kPiece; ++i) {
        if (std::memcmp(piece.data() + i, "OHDR", 4) != 0 || headers_.count(at + i)) continue;
        if (whole_header(at + i)) found.push_back(at + i);
      }
    }
    return found;
  }

  /// Whether a version-2 header whose checksum holds begins at `address` (raw data that happens to
  /// hold "OHDR" does not).
  bool whole_header(uint64_t address) const {
    try {
      return sealed(read_v2(address, "").block);
    } catch (const Refusal&) {
      return false;
    }
  }


  const Bytes& file_;
  std::deque<std::pair<uint64_t, std::string>> pending_;  // headers to check: address, path ("" unknown)
  std::set<uint64_t> headers_;                            // headers checked
  std::set<uint64_t> continuations_;                      // continuation blocks read
  bool dense_ = false;
};

}  // namespace

std::string check_headers(const std::string& path) {
  std::string problem;
  try {
    const auto file = open_input(path);
    const Bytes bytes(file.descriptor(), file.size());
    Check(bytes).run();
  } catch (const Refusal& refusal) {
    problem = refusal.problem;
  } catch (const std::bad_alloc&) {
    problem = "an object header too large to read";
  } catch (const InputError&) {
    // not a regular file, or not readable: is_hdf5, on the same path, names the problem
  }
  return problem;
}

}  // namespace sg::h5
