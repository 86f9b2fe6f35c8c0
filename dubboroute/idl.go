package dubboroute

// IDL makes a route call a protobuf (IDL) method over Triple: the
// request's JSON body is the request message (protobuf's JSON mapping),
// and the response message is answered as JSON.
type IDL struct {
	// DescriptorSet is a FileDescriptorSet file holding the service and
	// every type it uses (protoc --include_imports --descriptor_set_out).
	// Read when the configuration is loaded or reloaded.
	DescriptorSet string `yaml:"descriptor_set"`
}
