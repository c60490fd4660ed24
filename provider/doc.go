// Package provider keeps a model provider's conversation exactly: each
// model call's request and response are stored in the log as provider
// records (docs/format.md, "Provider records"), and the agent vocabulary
// (user and assistant messages, reasoning, tool calls and results, usage,
// steps and turns) is derived from them in the same batch, so that show,
// serve, the projections, checkpoints and verify work on such sessions as
// on any other.
//
// A Session records through an HTTP middleware whose type is the one the
// official Go SDKs take (anthropic-sdk-go's and openai-go's
// option.WithMiddleware), so recording is one option when the client is
// built:
//
//	ps, err := provider.Open(ctx, h, provider.WithKeys(keys))
//	...
//	mw := ps.Middleware() // option.WithMiddleware(mw) when the SDK's client is built
//
// The request body is stored without credentials or transport headers;
// the response as its JSON or as its server-sent events with their
// boundaries. Nothing a provider sent is dropped: bodies are stored as
// given, unknown and future fields included. A request stores only the
// conversation items that the previous request of the live branch did not
// have (Codec.ListKey), so a session's log grows with the conversation,
// not with its square.
//
// Secrets: what a provider signed or will verify (thinking, signatures,
// encrypted reasoning) and what a resumed conversation must resend
// exactly is never rewritten in a way that cannot be undone. A secret of
// a known shape in a provider record is replaced by its redaction marker
// and its original kept sealed to the agent's Keys (redact.Escrow), so no
// file of the store holds it in clear, while Conversation, read with the
// Keys, gives every byte back.
//
// Conversation (and At, for any seq of the live branch, after rollbacks
// and on forks) returns the last request, its response when it is
// complete and the inputs recorded since (tool results): what an SDK
// adapter rebuilds its own request parameters from. The adapters live in
// modules of their own (adapters/anthropic, adapters/openai), so that
// this module does not require the SDKs; this package knows the
// providers' wire formats (Codec), not their SDKs' types.
//
// The package builds on eventlog, handle, replay, projection and redact;
// it knows nothing of files or of a store's kind. A Session is safe for
// concurrent use; it is the only writer of its handle while it records.
package provider
