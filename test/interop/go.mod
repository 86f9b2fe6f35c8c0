module github.com/dubbogw/dubbogw/test/interop

go 1.26.0

require (
	github.com/apache/dubbo-go-hessian2 v1.12.5
	github.com/dubbogo/gost v1.13.1
	github.com/dubbogw/dubbogw v0.0.0
)

require (
	github.com/pkg/errors v0.9.1 // indirect
	go.uber.org/atomic v1.9.0 // indirect
)

replace github.com/dubbogw/dubbogw => ../..
