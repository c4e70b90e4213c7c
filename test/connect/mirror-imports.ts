// What mirror-formats.test.ts uses, from the package's modules.
import { MirrorMakerConfig } from '../../src/connect/mirror-maker.js'
export { MirrorMakerConfig }
export * from '../../src/connect/mirror/index.js'

export function MirrorMakerConfigFlows(props: Record<string, string>): ReturnType<MirrorMakerConfig['flows']> {
  return new MirrorMakerConfig(props).flows()
}
