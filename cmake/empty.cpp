// libDistOpt.so is assembled from the component archives; the shared library
// target needs one source of its own.
