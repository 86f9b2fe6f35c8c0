// Package all registers every kind the configuration can name: filters
// (filter/all), route kinds and sections (proxy: upstream routes and
// upstreams:; dubboroute: dubbo routes and dubbo:; servertls: tls:) and
// registry types (registry: static; registry/zookeeper). A program that reads
// configurations imports it for its side effects; adding a kind is its
// package and one line here.
package all

import (
	_ "github.com/dubbogw/dubbogw/dubboroute"         // route kind dubbo, section dubbo
	_ "github.com/dubbogw/dubbogw/filter/all"         // every filter
	_ "github.com/dubbogw/dubbogw/proxy"              // route kind upstream, section upstreams
	_ "github.com/dubbogw/dubbogw/registry"           // registry type static
	_ "github.com/dubbogw/dubbogw/registry/zookeeper" // registry type zookeeper
	_ "github.com/dubbogw/dubbogw/servertls"          // section tls
)
