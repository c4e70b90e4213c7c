// A byte range of a file, sent to a socket with sendfile so that record data never enters the JS heap.
// Storage hands these out (segment reads), the protocol layer carries them in a Fetch response's
// records, and the connection writes them: all three speak this one type.

export interface FileRegion {
  fd: number
  position: number
  length: number
}
