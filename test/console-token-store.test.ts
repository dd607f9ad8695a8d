/** Where the console keeps the token (console/src/token-store.ts): the tab's storage, forgotten at sign-out. */
import { describe, expect, it } from 'vitest';
import { tokenStore, type KeyValueStorage } from '../console/src/token-store';

function memoryStorage(): KeyValueStorage & { items: Map<string, string> } {
  const items = new Map<string, string>();
  return {
    items,
    getItem: (key) => items.get(key) ?? null,
    setItem: (key, value) => void items.set(key, value),
    removeItem: (key) => void items.delete(key),
  };
}

describe('the console keeps the token for the tab only, and forgets it at sign-out [console sign-in]', () => {
  it('saves the token trimmed, reads it back, and forgets it', () => {
    const storage = memoryStorage();
    const store = tokenStore(storage);
    expect(store.read()).toBeNull();
    store.save('  secret-token \n');
    expect(store.read()).toBe('secret-token');
    expect([...storage.items.values()]).toEqual(['secret-token']);
    store.forget();
    expect(store.read()).toBeNull();
    expect(storage.items.size).toBe(0);
  });

  it('refuses an empty token and reads a blank stored one as none', () => {
    const storage = memoryStorage();
    const store = tokenStore(storage);
    expect(() => store.save('   ')).toThrow(/empty/);
    storage.items.set('tws.token', ' ');
    expect(store.read()).toBeNull();
  });
});
