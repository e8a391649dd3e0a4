//===- Common.cpp - Specs, errors and file helpers of programs ------------===//
//
// Part of the support code of programs dist-compile generates, compiled
// once into the runtime archives instead of into every program
// (distrt/gen/Common.h; docs/codegen.md).
//
//===----------------------------------------------------------------------===//
#include "distrt/gen/Common.h"

namespace dg {

std::string shapeStr(const int64_t *dims, int rank) {
  std::string s = "[";
  for (int i = 0; i < rank; ++i)
    s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

int fail(Error &err, const char *fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  err.message = buf;
  return 1;
}

bool isDirectory(const std::string &path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool readText(const std::string &path, std::string &out) {
  FILE *f = fopen(path.c_str(), "r");
  if (!f)
    return false;
  out.clear();
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0)
    out.append(buf, n);
  fclose(f);
  return true;
}

int writeFile(const std::string &path, const void *data, size_t size,
              const char *what, Error &err) {
  FILE *f = fopen(path.c_str(), "wb");
  bool ok = f && (size == 0 || fwrite(data, 1, size, f) == size);
  if (f)
    ok = fclose(f) == 0 && ok;
  if (!ok)
    return fail(err, "%s: cannot write '%s' (%s)", what, path.c_str(),
                strerror(errno));
  return 0;
}

} // namespace dg
