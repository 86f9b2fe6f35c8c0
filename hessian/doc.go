// Package hessian is a Hessian 2.0 encoder and decoder with the Java type
// conventions Apache Dubbo's hessian-lite uses, written for the gateway's hot
// path: no reflection, bounded decoding, a value model that keeps Java types.
package hessian
