// Command pixiu is Apache dubbo-go-pixiu's own command (its cmd/pixiu: the
// gateway subcommand with every plugin pixiu registers), built from the
// release this module requires, for the bench harness's baseline
// (go run ./bench/harness -pixiu): row 4's HTTP→Dubbo request through
// pixiu instead of dubbogw. The harness writes the configuration and runs
//
//	pixiu gateway start -c pixiu.yaml -l warn
//
// It is a module of its own so that pixiu's dependencies (dubbo-go
// v3.3.1 and many more) move neither the root module's go.mod nor
// test/interop's.
package main

import (
	"os"

	"github.com/apache/dubbo-go-pixiu/pkg/cmd"
	"github.com/apache/dubbo-go-pixiu/pkg/common/constant"
	_ "github.com/apache/dubbo-go-pixiu/pkg/pluginregistry"
	"github.com/spf13/cobra"
)

func main() {
	root := &cobra.Command{
		Use:          "pixiu",
		Short:        "Apache dubbo-go-pixiu, for the bench harness's baseline",
		Version:      constant.Version,
		SilenceUsage: true,
	}
	root.AddCommand(cmd.GatewayCmd)
	if err := root.Execute(); err != nil {
		os.Exit(1)
	}
}
