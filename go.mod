module github.com/dubbogw/dubbogw

go 1.26

require (
	github.com/gorilla/websocket v1.5.3 // indirect
	github.com/prometheus/client_golang v1.25.0 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
)
