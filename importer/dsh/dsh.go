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
	for i, e := range voc.Events {
		orig := raw.Events[i]
		src := importer.Obj{"seq", orig.Seq}
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
		data := json.RawMessage(e.Data)
		if rewritten && e.Type != "assistant/chunk" {
			data = withSource(e.Data, src)
		}
		if e.Type != "assistant/message" || !rewritten {
			b.Add(e.Type, e.Time, data)
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
				b.Add("assistant/reasoning", e.Time, importer.Obj{"text", p.Text, "source", src})
			}
		}
		b.Add(e.Type, e.Time, data)
		s.SetLabel("model", d.Message.Source.Model)
		if u, ok := usage(d.Usage, d.Message.Source.Model, src); ok {
			b.Add("usage", e.Time, u)
		}
	}
	s.Events, err = b.Events()
	return s, err
}

// withSource adds "source" to the object data (the vocabulary's shapes are
// objects); other data is kept as it is.
func withSource(data json.RawMessage, src importer.Obj) json.RawMessage {
	d := bytes.TrimSpace(data)
	if len(d) < 2 || d[0] != '{' {
		return data
	}
	s, err := importer.Marshal(src)
	if err != nil {
		return data
	}
	if string(d) == "{}" {
		return json.RawMessage(`{"source":` + string(s) + `}`)
	}
	out := append([]byte{}, d[:len(d)-1]...)
	out = append(out, `,"source":`...)
	out = append(out, s...)
	return append(out, '}')
}

// usage maps a dsh message's usage onto SPEC §8's: dsh counts cache reads
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
		"source", append(src, "usage", raw),
	}, true
}
