{
  "targets": [
    {
      "target_name": "skein_native",
      "sources": [
        "native/src/addon.cc",
        "native/src/crc32c.cc",
        "native/src/mmap-index.cc",
        "native/src/sendfile.cc",
        "native/src/fsync.cc",
        "native/src/file-lock.cc",
        "native/src/malloc-tune.cc",
        "native/src/record-walk.cc",
        "native/src/snappy-block.cc",
        "native/src/lz4-block.cc",
        "native/src/batch-walk.cc"
      ],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "defines": [
        "NAPI_VERSION=9",
        "NAPI_DISABLE_CPP_EXCEPTIONS",
        "NODE_ADDON_API_DISABLE_DEPRECATED",
        "NODE_API_SWALLOW_UNTHROWABLE_EXCEPTIONS"
      ],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions", "-std=gnu++17"],
      "cflags_cc": ["-std=c++20", "-fvisibility=hidden", "-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"]
    }
  ]
}
