// Package governance parses and applies the traffic rules Dubbo Admin
// writes into Dubbo's config centre: configurators (overrides of provider
// weight, disabled and timeout), the tag router and the condition router.
// It does no I/O: the ZooKeeper registry reads the rule nodes, hands their
// data to Parse, and publishes per service a Router, which the Dubbo route
// handler asks to narrow a provider snapshot before the cluster chooses.
//
// # Where rules live (Dubbo's config centre on ZooKeeper)
//
// A rule is the data of one node, /dubbo/config/dubbo/<key> (the config
// centre's root "/<namespace>/config" with namespace "dubbo", then the
// group "dubbo"), YAML. The key names what the rule is about and its kind:
//
//	<application>.configurators            configurators of an application
//	<interface>:<version>:<group>.configurators
//	<application>.tag-router               tag router of a provider application
//	<application>.condition-router         condition router of an application
//	<interface>:<version>:<group>.condition-router
//
// Empty version and group stay as empty fields: "org.example.Users::" (see
// ServiceKey). Which application: a tag router is the providers'
// application's; an application's condition router is read both for the
// consumer's application (the gateway's) and for the providers'
// application, as Dubbo 3 does; an application's configurators are the
// consumer's (the gateway's).
//
// # Condition rules
//
// A condition is "when => then". Each side is a list of matches joined by
// "&"; a match is a key, "=" or "!=", and values separated by ",":
//
//	method = find*,list & arguments[0] = vip => host != 10.0.0.3 & port = 20880
//
// Tokens are as Dubbo's pattern ([&!=,]*)\s*([^&!=,\s]+) finds them: a
// separator run ("", "&", "=", "!=", ",") and a value of any other
// characters but blanks. This parser is stricter than Dubbo's, which skips
// what it does not understand: a separator other than those, a separator
// without a value after it, a key without values, or two values in a row
// without a separator are refused, with the position named. A key repeated
// after "&" adds to the same match; "=" values and "!=" values of one key
// are both kept. The prefixes "consumer." and "provider." of keys are
// dropped, as Dubbo drops them.
//
// A match with "=" values only holds when some value matches; with "!="
// values only, when none matches; with both, when no "!=" value matches and
// some "=" value does. A key whose value is absent never matches (neither
// "=" nor "!="). A value is a glob with at most one meaningful "*", as
// Dubbo's UrlUtils.isMatchGlobPattern: "*" matches anything, "ab*" a
// prefix, "*ab" a suffix, "a*b" a prefix and a suffix (the last "*" splits
// them). In the then side, a value "$name" is the consumer's parameter name
// (the gateway's application, host, interface, version, group): "host =
// $host" selects providers on the gateway's host. Range values ("1~10",
// Dubbo 3.2) are refused.
//
// The when side reads the request: method (the method called),
// arguments[N] (argument N as Java's String.valueOf renders it: strings and
// numbers only), attachments[key] (an attachment the gateway sends), and
// the consumer's application, host, interface, version, group and side
// ("consumer"). An empty when side, or "true", matches every request. The
// then side reads each provider: host, port, address (host:port),
// protocol, application and any other URL parameter. An empty then side, or
// "false", blocks the requests the when side matches: no provider.
//
// A rule's conditions apply in order, each to the providers the previous
// left (Dubbo 3's ConditionStateRouter): a condition whose when side does
// not match leaves them as they are; one whose then side leaves none
// empties the list only when the rule says force: true, and is ignored
// otherwise. A rule with enabled: false is as absent. runtime is accepted
// and has no effect: results that depend only on the method and the tag are
// computed once per provider snapshot, and conditions on arguments and
// attachments are evaluated at every call, which is what runtime: true
// asks. priority is accepted and has no effect: one rule per key, and the
// kinds apply in Dubbo 3's fixed order (below). Condition rules of
// configVersion v2.7 and v3.0 are read; v3.1 (several weighted
// destinations, trafficDisable) is refused by name.
//
// # Tag rules
//
// A provider's static tag is its URL parameter dubbo.tag; a tag rule adds
// dynamic tags: each names providers by address ("host:port", "host",
// "0.0.0.0:port", "0.0.0.0") or by parameters (match: key and one of
// exact, prefix, regex, wildcard, empty, noempty; match wins when both are
// set). A request's tag comes from its route (a header or a constant) and
// is sent to the provider as the attachment dubbo.tag. As dubbo-go v3.3.0's
// tag router does:
//
//   - a request without a tag goes to the providers with no static tag and
//     in no tag's addresses;
//   - a request with tag t goes to the providers t names (by match, by
//     addresses, or, for a tag the rule does not define, by static tag t);
//     when there is none and the rule says force: false, to the providers
//     a request without a tag would go to; with force: true, nowhere.
//
// Without a rule (or with enabled: false, or no tags) static tags alone
// apply, with force false.
//
// # Configurators
//
// Each item of configs applies its parameters to the providers it
// addresses. side: consumer (rules for consumers): addresses (default
// 0.0.0.0) name the consumer's host, providerAddresses (default all) the
// providers' addresses, applications (default all) the consumer's
// application. side: provider or none: addresses name the providers' hosts
// or addresses, applications their application. services (application
// scope; default all) name "[group/]interface[:version]". Parameters
// applied: weight, disabled (true leaves the provider out), timeout
// (milliseconds, side consumer: the call's timeout per provider, when
// shorter than the route's); the others are listed as ignored. A
// provider-side rule is applied by the gateway too, which is what the
// provider would register after applying it itself (Java providers do;
// dubbo-go ones do not). Legacy override URLs apply first, then the
// application's rule, then the service's (as Dubbo's RegistryDirectory).
//
// # Cost
//
// A service without rules and without a tagged provider has no Router:
// a call pays the directory's atomic load. With rules, Router.Route
// evaluates the conditions on arguments and attachments (their values
// compared with each pattern: linear in the patterns' lengths), then looks
// the result up in a cache of the last snapshots (a map read, no lock, no
// allocation); a miss computes it once (O(providers × conditions)). At 100
// providers (BenchmarkRoute, same run): 22 ns a call with static tags, 36
// ns with two conditions, one on an argument, against 3.1 µs and 2
// allocations computed each time (85 times as long).
//
// # Order
//
// Tag router, then the providers' application's condition router, then
// the consumer application's, then the service's (Dubbo 3's state router
// order: TagStateRouter, ProviderAppStateRouter, AppStateRouter,
// ServiceStateRouter).
package governance
