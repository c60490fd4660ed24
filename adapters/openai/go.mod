module github.com/sessionlog/sessionlog/adapters/openai

go 1.26.0

require (
	filippo.io/age v1.3.2
	github.com/openai/openai-go/v3 v3.102.0
	github.com/sessionlog/sessionlog v0.0.0
	github.com/stretchr/testify v1.12.1
)

require (
	filippo.io/hpke v0.4.0 // indirect
	github.com/coder/websocket v1.8.15 // indirect
	github.com/klauspost/compress v1.20.4 // indirect
	github.com/oklog/ulid/v2 v2.1.2 // indirect
	github.com/spf13/afero v1.15.0 // indirect
	github.com/tidwall/gjson v1.20.0 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.2.1 // indirect
	github.com/tidwall/sjson v1.2.5 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/crypto v0.58.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
)

replace github.com/sessionlog/sessionlog => ../..
