// Package storeurl opens a session store from where a user names it: a
// folder path (the file store, package handle) or a
// nats://host:port[,host:port…][/prefix][?replicas=N&sync=always&lease=D]
// URL (the JetStream store, jetstream.OpenURL; docs/distributed.md). It is
// what logtool's --dir, --store and copy's SRC and DST go through, and what
// an embedding program calls to accept the same names. ReadOnly opens
// either kind so that nothing can change it (logtool serve).
//
// It tells the two apart and opens the one named; it knows nothing of
// what is done with a store once open, and nothing of any command line.
package storeurl
