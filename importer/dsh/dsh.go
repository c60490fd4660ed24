package dsh

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/sessionlog/sessionlog/importer"
)

// Name is the --from value and the "source" label.
const Name = "dsh"

// New returns the importer of DeepSeek Harness session logs (*.jsonl).
func New() importer.Importer {
	return importer.Format{Label: Name, Suffix: ".jsonl", ParseFunc: parse}
}

func parse(_ context.Context, r io.Reader, name string, _ importer.Config) (importer.Session, error) {
	return Parse(r, name)
}

// Parse converts one dsh session log.
func Parse(r io.Reader, name string) (importer.Session, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return importer.Session{}, err
	}
	raw, err := ParseLog(bytes.NewReader(data))
	if err != nil {
		return importer.Session{}, importer.FormatError(err)
	}
	voc, err := ParseLog(bytes.NewReader(data), Vocabulary())
	if err != nil {
		return importer.Session{}, importer.FormatError(err)
	}
	if len(raw.Events) != len(voc.Events) {
		return importer.Session{}, fmt.Errorf("dsh: %d events read, then %d", len(raw.Events), len(voc.Events))
	}

	s := importer.NewSession(Name, name)
	s.CreatedAt = raw.CreatedAt
	s.SetLabel("sourceId", raw.Labels["dsh.id"])
	s.SetLabel("cwd", raw.Labels["dsh.cwd"])
	for k, v := range raw.Labels {
		switch k {
		case "source", "dsh.id", "dsh.cwd":
		default:
			s.SetLabel(k, v)
		}
	}

	var b importer.Builder
	rows := bytes.Split(data, []byte("\n"))
	record := func(line int) json.RawMessage { return bytes.TrimSuffix(rows[line-1], []byte("\r")) }
	b.Record(1, record(1))
	b.Keep(importer.Namespace(Name, "session"), s.CreatedAt)
	line := 0
	for i, e := range voc.Events {
		orig := raw.Events[i]
		if l := raw.Lines[i]; l != line {
			b.Keep(importer.Namespace(Name, "record"), e.Time)
			line = l
			b.Record(line, record(line))
		}
		switch e.Type {
		case "request/header":
			var d struct {
				Header struct {
					Config struct {
						Model string `json:"model"`
					} `json:"config"`
				} `json:"header"`
			}
			_ = json.Unmarshal(orig.Data, &d) // another shape: no model
			s.SetLabel("model", d.Header.Config.Model)
		case "session/title":
			var d struct {
				Title string `json:"title"`
			}
			_ = json.Unmarshal(orig.Data, &d)
			s.SetLabel("title", d.Title)
		}
		rewritten := !bytes.Equal(e.Data, orig.Data)
		if !importer.IsVocabulary(e.Type) {
			// dsh's own types: the row itself, in dsh's namespace.
			b.AddRecord(importer.Namespace(Name, e.Type), e.Time)
			if b.Taken() {
				continue
			}
		}
		if e.Type == "assistant/chunk" && b.Taken() {
			// The packed row's later deltas: its first carries the row.
			b.Add(e.Type, e.Time, e.Data)
			continue
		}
		if e.Type != "assistant/message" || !rewritten {
			if !canCarry(e.Data) {
				// Data that can hold no "source": the row kept beside it.
				b.AddRecord(importer.Namespace(Name, "record"), e.Time)
				b.Add(e.Type, e.Time, e.Data)
				continue
			}
			b.Add(e.Type, e.Time, withSource(e.Data, b.Src()))
			continue
		}
		var d struct {
			Message struct {
				Content []struct {
					Type string `json:"type"`
					Text string `json:"text"`
				} `json:"content"`
				Source struct {
					Model string `json:"model"`
				} `json:"source"`
			} `json:"message"`
			Usage json.RawMessage `json:"usage"`
		}
		_ = json.Unmarshal(orig.Data, &d) // the vocabulary read it: it is an object
		for _, p := range d.Message.Content {
			if p.Type == "reasoning" {
				b.Add("assistant/reasoning", e.Time, importer.Obj{"text", p.Text, "source", b.Src()})
			}
		}
		b.Add(e.Type, e.Time, withSource(e.Data, b.Src()))
		s.SetLabel("model", d.Message.Source.Model)
		if u, ok := usage(d.Usage, d.Message.Source.Model, b.Src()); ok {
			b.Add("usage", e.Time, u)
		}
	}
	b.Keep(importer.Namespace(Name, "record"), b.Last())
	s.Records = b.Records()
	s.Events, err = b.Events()
	return s, err
}

// canCarry reports whether data is an object without a "source" key of
// its own: withSource can add one.
func canCarry(data json.RawMessage) bool {
	var probe map[string]json.RawMessage
	if json.Unmarshal(data, &probe) != nil || probe == nil {
		return false
	}
	_, taken := probe[importer.SourceKey]
	return !taken
}

// withSource adds "source" to the object data, which canCarry accepts.
func withSource(data json.RawMessage, src importer.Obj) json.RawMessage {
	d, err := importer.Marshal(data)
	if err != nil {
		return data
	}
	sb, err := importer.Marshal(src)
	if err != nil {
		return data
	}
	if string(d) == "{}" {
		return json.RawMessage(`{"source":` + string(sb) + `}`)
	}
	out := append([]byte{}, d[:len(d)-1]...)
	out = append(out, `,"source":`...)
	out = append(out, sb...)
	return append(out, '}')
}

// usage maps a dsh message's usage onto docs/format.md §8's: dsh counts cache reads
// (and writes) apart from inputTokens, §8 counts them in it, cachedTokens
// being the reads. ok is false without both token counts, or with a count
// negative or a sum beyond int64.
func usage(raw json.RawMessage, model string, src importer.Obj) (importer.Obj, bool) {
	var u struct {
		InputTokens      *int64 `json:"inputTokens"`
		OutputTokens     *int64 `json:"outputTokens"`
		CacheReadTokens  int64  `json:"cacheReadTokens"`
		CacheWriteTokens int64  `json:"cacheWriteTokens"`
	}
	if json.Unmarshal(raw, &u) != nil || u.InputTokens == nil || u.OutputTokens == nil {
		return nil, false
	}
	in, ok := importer.Tokens(*u.InputTokens, u.CacheReadTokens, u.CacheWriteTokens)
	if !ok || *u.OutputTokens < 0 {
		return nil, false
	}
	return importer.Obj{
		"inputTokens", in,
		"outputTokens", *u.OutputTokens,
		"cachedTokens", importer.OptInt(u.CacheReadTokens),
		"model", importer.Opt(model),
		"source", src,
	}, true
}
