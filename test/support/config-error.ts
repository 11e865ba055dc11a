// The message of the ConfigError that loading a configuration throws (fails the test when it loads).
import { expect } from 'chai';
import { ConfigError } from '@mcp-tasks/runtime';

export function configError(load: () => unknown): string {
  try {
    load();
  } catch (error) {
    expect(error).to.be.instanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('expected a ConfigError');
}
