// Package interop proves the gateway's hessian codec against Apache
// dubbo-go-hessian2, value by value and in benchmarks. It is its own module
// so that the gateway's module never carries dubbo-go-hessian2's
// dependencies.
package interop
