module github.com/sessionlog/sessionlog/bench

go 1.26

require (
	github.com/sessionlog/sessionlog v0.0.0
	github.com/spf13/afero v1.15.0
	github.com/stretchr/testify v1.12.1
)

require (
	github.com/klauspost/compress v1.20.4 // indirect
	github.com/oklog/ulid/v2 v2.1.2 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/text v0.28.0 // indirect
)

replace github.com/sessionlog/sessionlog => ../
