package registry

// Presence is what a registry knows of an interface without subscribing to
// it, as Catalog.Lookup answers.
type Presence int

// Presences.
const (
	// PresenceUnknown: the registry cannot tell (its listing is not read
	// yet, or it is unreachable). Callers subscribe as they would without
	// a catalog, so a service that exists is never refused for it.
	PresenceUnknown Presence = iota
	// PresenceAbsent: nothing is registered under the interface.
	PresenceAbsent
	// PresencePresent: something is registered under the interface
	// (perhaps no provider of the version or group asked for).
	PresencePresent
)

func (p Presence) String() string {
	switch p {
	case PresenceAbsent:
		return "absent"
	case PresencePresent:
		return "present"
	}
	return "unknown"
}

// Catalog is implemented by registries that know, from memory, which
// interfaces are registered at all. The generic pass-through asks it
// before it subscribes to a key nobody holds, so a client naming
// interfaces nobody provides costs no subscription and no watch.
type Catalog interface {
	// Lookup says whether iface is registered. It never waits for the
	// network: while the answer is PresenceUnknown, wait (when not nil) is
	// closed once the registry may know more (its listing was read, or
	// the registry is found unreachable); a nil wait means asking again
	// will not help soon.
	Lookup(iface string) (p Presence, wait <-chan struct{})
}

// Lookup says whether a static registry lists iface.
func (s *Static) Lookup(iface string) (Presence, <-chan struct{}) {
	if _, ok := s.urls[iface]; ok {
		return PresencePresent, nil
	}
	return PresenceAbsent, nil
}
