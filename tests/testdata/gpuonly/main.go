// Command gpuonly imports the GPU device and nothing else of clinfer's
// devices, and prints the registered device names, one per line.
// tests.TestGPUOnlyProgram runs it to show that importing clbackend
// registers "GPU" and not "CPU".
package main

import (
	"fmt"

	_ "github.com/clinfer/clinfer/clbackend"
	"github.com/clinfer/clinfer/plugin"
)

func main() {
	for _, d := range plugin.Devices() {
		fmt.Println(d)
	}
}
