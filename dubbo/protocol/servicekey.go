package protocol

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
