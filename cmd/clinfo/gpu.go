package main

import (
	"fmt"
	"sync"

	"github.com/clinfer/clinfer/clbackend"
	"github.com/clinfer/clinfer/clbackend/cl"
	"github.com/clinfer/clinfer/plugin/driver"
)

// This file fills clinfo's plugin section from clinfer's GPU plugin.

func init() { pluginViewOf = gpuView }

// gpuKeys are the plugin properties clinfo shows per device.
var gpuKeys = []string{
	driver.KeyFullDeviceName,
	driver.KeyDeviceType,
	driver.KeyOptimizationCapabilities,
	driver.KeyDeviceArchitecture,
	driver.KeyDeviceUUID,
}

// gpu is the plugin clinfo asks, constructed on first use. clinfo never
// compiles, so the plugin holds no OpenCL object to release before exit.
var gpu struct {
	once sync.Once
	p    *clbackend.Plugin
	err  error
}

// gpuView is pluginViewOf: the GPU plugin's name and properties for d, or
// why the plugin does not use d.
func gpuView(d *cl.Device, _ int) (*pluginView, error) {
	gpu.once.Do(func() { gpu.p, gpu.err = clbackend.New() })
	if gpu.err != nil {
		return nil, gpu.err
	}
	for _, dev := range gpu.p.Devices() {
		if !dev.CL.Equal(d) {
			continue
		}
		v := &pluginView{Device: dev.Name, Properties: map[string]string{}}
		for _, k := range gpuKeys {
			val, err := gpu.p.DeviceProperty(dev.ID, k)
			if err == nil {
				v.Properties[k] = val
			}
		}
		return v, nil
	}
	why := clbackend.Unusable(d)
	if why == "" {
		why = "not enumerated"
	}
	return &pluginView{}, fmt.Errorf("clbackend: device not used by clinfer's GPU plugin: %s", why)
}
