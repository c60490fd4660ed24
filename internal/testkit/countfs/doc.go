// Package countfs is test and benchmark support: an afero.Fs wrapper that
// counts the bytes read through its files and their fsyncs, so tests can
// assert that an operation reads a bounded amount (Stat, a resumed digest)
// or shares fsyncs (group commit). It knows nothing of logs.
package countfs
