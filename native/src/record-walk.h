// The record walk of a produced batch's records section, natively: the fast path of
// src/protocol/records/record-walk.ts (see there), one pass over whole records with no object per record.
#pragma once

#include <napi.h>

namespace skein {

// walkRecords(buf, io) -> position (io: the numbers in and out, see record-walk.cc)
Napi::Value WalkRecords(const Napi::CallbackInfo& info);

}  // namespace skein
