module github.com/sessionlog/sessionlog

go 1.26

require (
	github.com/oklog/ulid/v2 v2.1.2
	github.com/spf13/afero v1.15.0
	github.com/stretchr/testify v1.12.1
)

require (
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/text v0.28.0 // indirect
)
