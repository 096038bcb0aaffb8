public import ArgumentParser
public import Demux
public import Decode

extension SourceOptions.Transport: ExpressibleByArgument {}
extension HardwareAcceleration: ExpressibleByArgument {}
