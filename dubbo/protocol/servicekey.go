package protocol

import "strings"

// ServiceKey is Dubbo's name of a service, as Java's URL.getServiceKey
// writes it and providers report it: "group/interface:version", leaving
// out an empty group or version.
func ServiceKey(group, iface, version string) string {
	s := iface
	if group != "" {
		s = group + "/" + s
	}
	if version != "" {
		s += ":" + version
	}
	return s
}

// JavaIdent reports whether s is a Java identifier (a method or field name).
func JavaIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		ok := r == '_' || r == '$' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || r > 0x7f || (i > 0 && r >= '0' && r <= '9')
		if !ok {
			return false
		}
	}
	return true
}

// JavaName reports whether s is a dotted Java name (a class or interface).
func JavaName(s string) bool {
	if s == "" {
		return false
	}
	for part := range strings.SplitSeq(s, ".") {
		if !JavaIdent(part) {
			return false
		}
	}
	return true
}
