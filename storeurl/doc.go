// Package storeurl opens a session store from where a user names it: a
// folder path (the file store, package handle) or a
// nats://host:port[/prefix][?sync=always&lease=D] URL (the JetStream store,
// package handle/jetstream; docs/distributed.md). It is what logtool's --dir,
// --store and copy's SRC and DST go through, and what an embedding program
// calls to accept the same names.
//
// It knows how to tell the two apart and how to dial a store; it knows
// nothing of what is done with a store once open, and nothing of any
// command line.
package storeurl
