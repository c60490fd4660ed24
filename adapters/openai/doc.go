// Package slopenai records an openai-go (v3) agent loop in a sessionlog
// session and rebuilds, at any seq of the session's live branch, the
// SDK's own request parameters that a loop which never crashed sends
// next.
//
// Recording is one option when the client is built:
//
//	ps, err := provider.Open(ctx, h, provider.WithKeys(keys))
//	...
//	client := openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("sk-example"), slopenai.Record(ps))
//
// Every Responses and Chat Completions call, streamed or not, is then
// kept as provider records (docs/format.md, "Provider records"). The loop
// records each tool's output as soon as the tool has run (RecordOutput,
// RecordToolMessage) and marks a write-effect tool before it runs
// (provider.Session.BeginTool). After a crash, Responses (or Chat) turns
// the session's provider.Conversation into the next request's params and
// says what is left to do: the calls to run, the calls whose outcome is
// unknown, whether the last request must be asked again, whether the turn
// is answered.
//
// The package knows openai-go's types and the provider records; it knows
// nothing of stores or files (provider and handle do that) and does not
// run tools. The rebuild assumes the loop sends the whole conversation in
// each request (input items, not previous_response_id).
package slopenai
