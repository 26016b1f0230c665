/* tilec_version.h: the version of the headers, and TILEC_API. Included by tilec.h and
 * tilec_runtime.h (so by tilec_jit.h too); a host need not include it itself. */
#ifndef TILEC_VERSION_H
#define TILEC_VERSION_H

/* This header's version; tilec_version() (tilec.h) is the library's. CMakeLists.txt refuses to
 * configure when they differ from project(VERSION). */
#define TILEC_VERSION_MAJOR 0
#define TILEC_VERSION_MINOR 1
#define TILEC_VERSION_PATCH 0

/* TILEC_API marks what libtilec_jit.so exports: the library is built with -fvisibility=hidden and a
 * version script, so nothing else leaves it (docs/abi.md, "The library's ABI"). */
#ifndef TILEC_API
#if defined(__GNUC__)
#define TILEC_API __attribute__((visibility("default")))
#else
#define TILEC_API
#endif
#endif

#endif
