// Package all registers every filter of filter lists: a program that
// reads configurations imports it for its side effects. Adding a filter
// is its package and one line here.
package all

import (
	_ "github.com/dubbogw/dubbogw/filter/auth"      // auth
	_ "github.com/dubbogw/dubbogw/filter/cors"      // cors
	_ "github.com/dubbogw/dubbogw/filter/headers"   // headers
	_ "github.com/dubbogw/dubbogw/filter/ipfilter"  // ip
	_ "github.com/dubbogw/dubbogw/filter/ratelimit" // rate_limit
	_ "github.com/dubbogw/dubbogw/filter/rewrite"   // rewrite
)
