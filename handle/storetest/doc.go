// Package storetest is the contract suite every handle.Store must pass:
// storetest.Run(t, newHarness) runs the same assertions against any store
// (files on the OS, files in memory, later other encodings and backends).
// A harness gives the suite a fresh store and a way to damage a session's
// stored bytes, so torn tails and corruption are tested the same way
// everywhere. It knows the Store and Handle contract and the row rules of
// package eventlog, nothing of any store's internals.
package storetest
