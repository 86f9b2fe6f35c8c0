package main

// The application level of the generated registry (Dubbo 3 "service
// discovery"), in the shape the gateway reads (registry/appdisc_*.go,
// registry/zookeeper/apps.go) and Java Dubbo 3.2 writes:
//
//	/<root>/mapping/<interface>             "<app>"
//	<services root>/<app>/<ip:port>          the instance: Curator's JSON, payload.metadata with
//	                                         dubbo.metadata.revision, dubbo.metadata.storage-type "remote",
//	                                         dubbo.endpoints and dubbo.metadata-service.url-params
//	/<root>/metadata/<app>/<revision>       the MetadataInfo of the revision (gson's JSON)
//
// Storage is "remote" so that the gateway finds every instance's services
// in ZooKeeper, with no live process behind the addresses (storage
// "local" would have it call each instance's MetadataService). Every
// application has two revisions, variant 0 and 1, which differ by their
// services' timestamp parameter (a redeploy): instances are written at
// variant 0, and the scale command's churn moves instances between the
// two.

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// appOf is the application serving interface i.
func (o *registryOptions) appOf(i int) int { return i % o.apps }

// appName is application a's name.
func (o *registryOptions) appName(a int) string { return o.appPrefix + strconv.Itoa(a) }

// appInterfaces are the interfaces application a serves.
func (o *registryOptions) appInterfaces(a int) []int {
	var out []int
	for i := a; i < o.services; i += o.apps {
		out = append(out, i)
	}
	return out
}

// instanceAddr is the address of instance g (a*instances + k): one host
// of 198.18.0.0/15 per instance, Dubbo's port.
func instanceAddr(g int) string { return benchHost(g) + ":" + strconv.Itoa(basePort) }

// revision names application a's metadata at variant v, as Java Dubbo
// names it: a hex MD5 (here of the application, variant and interfaces).
func (o *registryOptions) revision(a, v int) string {
	h := md5.New()
	fmt.Fprintf(h, "%s|%d", o.appName(a), v)
	for _, i := range o.appInterfaces(a) {
		fmt.Fprintf(h, "|%s", o.iface(i))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// curatorInstance is an instance node's JSON as Curator writes it for
// Java Dubbo 3.2 (registry/testdata/appdisc/java-instance.json).
type curatorInstance struct {
	Name                string         `json:"name"`
	ID                  string         `json:"id"`
	Address             string         `json:"address"`
	Port                int            `json:"port"`
	SSLPort             *int           `json:"sslPort"`
	Payload             curatorPayload `json:"payload"`
	RegistrationTimeUTC int64          `json:"registrationTimeUTC"`
	ServiceType         string         `json:"serviceType"`
	URISpec             *string        `json:"uriSpec"`
}

type curatorPayload struct {
	Class    string            `json:"@class"`
	ID       string            `json:"id"`
	Name     string            `json:"name"`
	Metadata map[string]string `json:"metadata"`
}

// instanceJSON is instance k of application a at revision variant v.
func (o *registryOptions) instanceJSON(a, k, v int) []byte {
	addr := instanceAddr(a*o.instances + k)
	host, _, _ := strings.Cut(addr, ":")
	app := o.appName(a)
	port := strconv.Itoa(basePort)
	in := curatorInstance{
		Name: app, ID: addr, Address: host, Port: basePort,
		Payload: curatorPayload{
			Class: "org.apache.dubbo.registry.zookeeper.ZookeeperInstance", ID: addr, Name: app,
			Metadata: map[string]string{
				"dubbo.endpoints": `[{"port":` + port + `,"protocol":"dubbo"}]`,
				"dubbo.metadata-service.url-params": `{"connections":"1","version":"1.0.0","dubbo":"2.0.2","release":"3.2.10",` +
					`"side":"provider","port":"` + port + `","protocol":"dubbo"}`,
				"dubbo.metadata.revision":     o.revision(a, v),
				"dubbo.metadata.storage-type": "remote",
				"timestamp":                   strconv.FormatInt(1700000000000+int64(a)*1000+int64(k), 10),
			},
		},
		RegistrationTimeUTC: 1700000000000 + int64(a)*1000 + int64(k),
		ServiceType:         "DYNAMIC",
	}
	data, err := json.Marshal(in)
	if err != nil {
		panic(fmt.Sprintf("encoding an instance: %v", err)) // plain strings and numbers: cannot fail
	}
	return data
}

// metadataDoc and metadataService are MetadataInfo as gson writes it
// (registry/testdata/appdisc/java-metadata-gson.json).
type metadataDoc struct {
	App      string                     `json:"app"`
	Revision string                     `json:"revision"`
	Services map[string]metadataService `json:"services"`
}

type metadataService struct {
	Name     string            `json:"name"`
	Protocol string            `json:"protocol"`
	Port     int               `json:"port"`
	Path     string            `json:"path"`
	Params   map[string]string `json:"params"`
}

// metadataJSON is application a's MetadataInfo at variant v: each of its
// interfaces over dubbo, with a provider's parameters.
func (o *registryOptions) metadataJSON(a, v int) []byte {
	app := o.appName(a)
	doc := metadataDoc{App: app, Revision: o.revision(a, v), Services: map[string]metadataService{}}
	for _, i := range o.appInterfaces(a) {
		iface := o.iface(i)
		doc.Services[iface+":dubbo"] = metadataService{
			Name: iface, Protocol: "dubbo", Port: basePort, Path: iface,
			Params: map[string]string{
				"anyhost": "true", "application": app, "background": "false", "deprecated": "false",
				"dubbo": "2.0.2", "dynamic": "true", "generic": "false", "interface": iface,
				"methods": "get,list,create,update,delete", "path": iface, "release": "3.2.10",
				"service-name-mapping": "true", "side": "provider",
				"timestamp": strconv.FormatInt(1700000000000+int64(a)*1000+int64(v), 10),
			},
		}
	}
	data, err := json.Marshal(doc)
	if err != nil {
		panic(fmt.Sprintf("encoding metadata: %v", err)) // plain strings and numbers: cannot fail
	}
	return data
}

// writeApps adds the application level's nodes to b (the parents exist).
func writeApps(b *zkBatch, o registryOptions) error {
	root, services := o.rootPath(), o.servicesRootPath()
	// Metadata, then instances, then mappings: a gateway reading while
	// they are written finds what each node names.
	for a := range o.apps {
		app := o.appName(a)
		if err := b.create(root+"/metadata/"+app, nil); err != nil {
			return err
		}
		for v := range 2 {
			if err := b.create(root+"/metadata/"+app+"/"+o.revision(a, v), o.metadataJSON(a, v)); err != nil {
				return err
			}
		}
		if err := b.create(services+"/"+app, nil); err != nil {
			return err
		}
		for k := range o.instances {
			if err := b.create(services+"/"+app+"/"+instanceAddr(a*o.instances+k), o.instanceJSON(a, k, 0)); err != nil {
				return err
			}
		}
	}
	for i := range o.services {
		if err := b.create(root+"/mapping/"+o.iface(i), []byte(o.appName(o.appOf(i)))); err != nil {
			return err
		}
	}
	return nil
}
