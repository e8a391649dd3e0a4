//===- Npy.cpp - .npy input and output of generated programs --------------===//
//
// Part of the support code of programs dist-compile generates, compiled
// once into the runtime archives instead of into every program
// (distrt/gen/Npy.h; docs/codegen.md).
//
//===----------------------------------------------------------------------===//
#include "distrt/gen/Npy.h"

#include <sys/stat.h>

namespace dg {

bool parseNpyDescr(const std::string &d, DType &out) {
  static const struct {
    const char *descr;
    DType t;
  } table[] = {{"<f4", F32}, {"<f8", F64}, {"<f2", F16}, {"|i1", I8},
               {"<i2", I16}, {"<i4", I32}, {"<i8", I64}, {"|u1", U8},
               {"<u2", U16}, {"<u4", U32}, {"<u8", U64}, {"|b1", BOOL},
               {"i1", I8},   {"u1", U8},   {"b1", BOOL}};
  for (auto &e : table)
    if (d == e.descr) {
      out = e.t;
      return true;
    }
  return false;
}

int readNpyStream(FILE *f, uint64_t size, const std::string &path,
                  HostTensor &out, Error &err) {
  char magic[8];
  if (fread(magic, 1, 8, f) != 8 || memcmp(magic, "\x93NUMPY", 6) != 0)
    return fail(err,
                "'%s' is not a .npy file (no \\x93NUMPY magic); write inputs "
                "with numpy.save",
                path.c_str());
  if (magic[6] < 1 || magic[6] > 3)
    return fail(err,
                "'%s': .npy format version %d.%d is not supported (1.0 "
                "to 3.0 are)",
                path.c_str(), magic[6], magic[7]);
  uint32_t hlen = 0;
  uint64_t prefix = magic[6] == 1 ? 10 : 12;
  unsigned char l[4] = {0, 0, 0, 0};
  if (size < prefix || fread(l, 1, prefix - 8, f) != prefix - 8)
    return fail(err, "'%s': truncated .npy header", path.c_str());
  hlen = l[0] | (l[1] << 8) | (l[2] << 16) | ((uint32_t)l[3] << 24);
  if (hlen > size - prefix || hlen > (1u << 20))
    return fail(err,
                "'%s': truncated .npy header (it claims %u bytes; the file "
                "has %llu after the preamble)",
                path.c_str(), hlen, (unsigned long long)(size - prefix));
  std::string header(hlen, '\0');
  if (hlen && fread(&header[0], 1, hlen, f) != hlen)
    return fail(err, "'%s': truncated .npy header", path.c_str());
  auto field = [&](const char *key) -> std::string {
    size_t p = header.find(std::string("'") + key + "'");
    if (p == std::string::npos)
      return "";
    p = header.find(':', p);
    return p == std::string::npos ? "" : header.substr(p + 1);
  };
  std::string descr = field("descr");
  size_t q1 = descr.find('\''),
         q2 = q1 == std::string::npos ? q1 : descr.find('\'', q1 + 1);
  DType dt;
  if (q1 == std::string::npos || q2 == std::string::npos ||
      !parseNpyDescr(descr.substr(q1 + 1, q2 - q1 - 1), dt))
    return fail(err, "'%s': unsupported .npy dtype in header %s", path.c_str(),
                header.c_str());
  std::string fo = field("fortran_order");
  if (fo.find("True") < fo.find(','))
    return fail(err,
                "'%s': Fortran-ordered arrays are not supported; save "
                "numpy.ascontiguousarray(x)",
                path.c_str());
  std::string shape = field("shape");
  size_t lp = shape.find('('), rp = shape.find(')');
  out.spec.rank = 0;
  out.spec.dtype = dt;
  out.spec.name = "";
  if (lp == std::string::npos || rp == std::string::npos || rp < lp)
    return fail(err, "'%s': the .npy header has no shape tuple: %s",
                path.c_str(), header.c_str());
  std::string inner = shape.substr(lp + 1, rp - lp - 1);
  const char *s = inner.c_str();
  // Bytes the shape needs, in 128 bits so no product overflows.
  unsigned __int128 bytes = dtypeInfo(dt).size;
  while (*s) {
    while (*s == ' ' || *s == ',')
      ++s;
    if (!*s)
      break;
    if (out.spec.rank == 8)
      return fail(err, "'%s': rank above 8 is not supported", path.c_str());
    char *end;
    errno = 0;
    long long d = strtoll(s, &end, 10);
    if (end == s || d < 0 || errno == ERANGE ||
        (*end && *end != ',' && *end != ' '))
      return fail(err, "'%s': bad dimension in the .npy shape %s", path.c_str(),
                  shape.substr(lp, rp - lp + 1).c_str());
    out.spec.dims[out.spec.rank++] = d;
    bytes *= (unsigned long long)d;
    if (bytes > ((unsigned __int128)1 << 64))
      bytes = (unsigned __int128)1 << 64; // saturate; the check below fails
    s = end;
  }
  uint64_t avail = size - prefix - hlen;
  if (bytes > avail)
    return fail(err,
                "'%s': the header's shape %s needs %s data bytes, the "
                "file holds %llu",
                path.c_str(), shapeStr(out.spec.dims, out.spec.rank).c_str(),
                bytes >= ((unsigned __int128)1 << 64)
                    ? "more than 2^64"
                    : std::to_string((unsigned long long)bytes).c_str(),
                (unsigned long long)avail);
  out.data.resize((size_t)bytes);
  size_t got =
      out.data.empty() ? 0 : fread(out.data.data(), 1, out.data.size(), f);
  if (got != out.data.size())
    return fail(err, "'%s': expected %zu data bytes, file holds %zu",
                path.c_str(), out.data.size(), got);
  return 0;
}

int readNpy(const std::string &path, HostTensor &out, Error &err) {
  FILE *f = fopen(path.c_str(), "rb");
  if (!f)
    return fail(err, "cannot open input file '%s': %s", path.c_str(),
                strerror(errno));
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    fclose(f);
    return fail(err, "input '%s' is not a regular file; give a .npy file",
                path.c_str());
  }
  int rc = readNpyStream(f, (uint64_t)st.st_size, path, out, err);
  fclose(f);
  return rc;
}

int makeParentDirs(const std::string &path, Error &err) {
  for (size_t i = path.find('/', 1); i != std::string::npos;
       i = path.find('/', i + 1)) {
    std::string dir = path.substr(0, i);
    if (mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST)
      return fail(err, "cannot create directory '%s': %s", dir.c_str(),
                  strerror(errno));
  }
  return 0;
}

int writeNpy(const std::string &path, const TensorSpec &spec, const void *data,
             Error &err) {
  std::string shape = "(";
  for (int i = 0; i < spec.rank; ++i)
    shape += std::to_string(spec.dims[i]) +
             (spec.rank == 1 ? "," : (i + 1 < spec.rank ? ", " : ""));
  shape += ")";
  std::string header = std::string("{'descr': '") + dtypeInfo(spec.dtype).npy +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  if (makeParentDirs(path, err))
    return 1;
  FILE *f = fopen(path.c_str(), "wb");
  if (!f)
    return fail(err, "cannot write output file '%s': %s", path.c_str(),
                strerror(errno));
  unsigned char pre[10] = {0x93,
                           'N',
                           'U',
                           'M',
                           'P',
                           'Y',
                           1,
                           0,
                           (unsigned char)(header.size() & 0xff),
                           (unsigned char)(header.size() >> 8)};
  bool ok = fwrite(pre, 1, 10, f) == 10 &&
            fwrite(header.data(), 1, header.size(), f) == header.size() &&
            fwrite(data, 1, spec.bytes(), f) == spec.bytes();
  ok = (fclose(f) == 0) && ok;
  if (!ok)
    return fail(err, "short write to '%s'", path.c_str());
  return 0;
}

} // namespace dg
