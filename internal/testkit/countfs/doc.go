// Package countfs is test and benchmark support: an afero.Fs wrapper that
// counts the bytes read through its files, their fsyncs and the file
// operations (opens, stats, names listed), so tests can assert that an
// operation reads a bounded amount (Stat, a resumed digest), shares fsyncs
// (group commit) or touches what its answer needs, not the whole store. It knows nothing of logs.
package countfs
