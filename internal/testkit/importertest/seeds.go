package importertest

import "strings"

// dshHeader is the header row of the fuzz seeds.
const dshHeader = `{"type":"session","version":0,"id":"x","createdAt":1000,"cwd":"/w"}`

// DshLogs are seeds of the fuzz targets of internal/dsh and
// internal/importers/dsh: small dsh logs of every row kind, and edge cases.
func DshLogs() [][]byte {
	log := func(rows ...string) []byte {
		return []byte(strings.Join(append([]string{dshHeader}, rows...), "\n") + "\n")
	}
	return [][]byte{
		log(`{"type":"turn/start","data":{"turn":1}}`,
			`{"type":"user/message","seq":1,"time":2000,"data":{"content":[{"type":"text","text":"a<b"}]},"surfaceOp":"append"}`,
			`{"type":"session/title","data":{"title":"T"}}`,
			`{"type":"request/header","data":{"header":{"config":{"model":"ds"}}}}`,
			`{"type":"text-chunks","seq0":4,"time0":3000,"data":{"turn":1,"step":1,"index":0,"dt":[5,0],"texts":["x","y","z"]}}`,
			`{"type":"reasoning-chunks","seq0":7,"time0":3010,"data":{"index":0,"dt":[],"texts":["r"]}}`,
			`{"type":"tool-call-chunks","seq0":8,"time0":4000,"data":{"turn":1,"step":1,"index":1,"dt":[7],"id":"c1","name":"sh","args":["{","}"]}}`,
			`{"type":"assistant/message","data":{"message":{"content":[{"type":"reasoning","text":"hm"},{"type":"text","text":"Hi"}],"source":{"model":"ds"}},"usage":{"inputTokens":5,"outputTokens":2,"cacheReadTokens":100,"cacheWriteTokens":1}}}`,
			`{"type":"tool/call","data":{"callId":"c1","name":"sh","arguments":"{\"cmd\":\"ls\"}"}}`,
			`{"type":"tool/result","data":{"message":{"source":{"callId":"c1"},"content":[{"type":"tool-result","toolCallId":"c1","content":[{"type":"text","text":"ok"}],"isError":true}]},"error":{"code":"E"}}}`,
			`{"type":"assistant/chunk","data":{"chunk":{"type":"text-delta","text":"q"}}}`,
			`{"type":"turn/end","data":{"turn":1,"reason":{"kind":"completed"}}}`,
			``),
		log(`{"type":"user/message","data":{"text":"already ours"}}`, `{"type":"tool/result","data":{"message":{"source":{"callId":"c2"},"content":[]},"error":"E"}}`),
		// Edge cases: empty, header only, torn, wrong types, huge numbers,
		// deep nesting, invalid UTF-8, seqs and times out of order.
		nil,
		[]byte(dshHeader),
		[]byte(dshHeader + "\n" + `{"type":"turn/st`),
		[]byte(`{"type":"session","version":0,"createdAt":-1}`),
		[]byte(`{"type":"session","version":"0","createdAt":1}`),
		[]byte(`{"type":"session","version":0,"createdAt":281474976710656}`),
		[]byte(`{"type":"session","version":0,"createdAt":1,"x":[1, {"y":null}],"z":"\u00e9"}`),
		[]byte("{\"type\":\"session\",\"version\":0,\"createdAt\":1,\"x\":[\"\xff\"],\"\xfe\":1}\n"),
		log(`{"type":"a","seq":9223372036854775807,"time":9223372036854775807}`),
		log(`{"type":"a","time":9223372036854775807}`, `{"type":"b"}`),
		log(`{"type":"a","time":5}`, `{"type":"text-chunks","seq0":1,"time0":1,"data":{"dt":[-9],"texts":["a","b"]}}`),
		log(`{"type":"a","seq":1e3}`, `{"type":7}`, `{"type":""}`, `[]`),
		log(`{"type":"text-chunks","seq0":0,"data":{"dt":"x","texts":[1]}}`),
		log(`{"type":"image-chunks","seq0":0,"data":{}}`),
		log(`{"type":"a b","data":1}`, `{"type":"checkpoint","data":{}}`),
		log(`{"type":"a","data":` + strings.Repeat("[", 2000) + strings.Repeat("]", 2000) + `}`),
		log("{\"type\":\"user/message\",\"data\":{\"content\":[{\"type\":\"text\",\"text\":\"\xff\xfe \u2028\"}]}}"),
		log(`{"type":"assistant/message","data":{"message":{"content":"x"},"usage":{"inputTokens":9223372036854775807,"outputTokens":1,"cacheReadTokens":1}}}`),
		log(`{"type":"tool/call","data":{"callId":"c","arguments":"{\"a\":"}}`, `{"type":"turn/end","data":{"reason":null}}`),
	}
}
