/**
 * Where the console keeps the token: the browser tab's sessionStorage only (gone with the tab,
 * never a URL, never localStorage), so a shared machine does not keep it. Sign-out forgets it.
 */
export interface KeyValueStorage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

const KEY = 'tws.token';

export interface TokenStore {
  read(): string | null;
  save(token: string): void;
  forget(): void;
}

export function tokenStore(storage: KeyValueStorage): TokenStore {
  return {
    read: () => {
      const token = storage.getItem(KEY);
      return token && token.trim() !== '' ? token : null;
    },
    save: (token) => {
      const trimmed = token.trim();
      if (trimmed === '') throw new Error('An empty token cannot be saved.');
      storage.setItem(KEY, trimmed);
    },
    forget: () => storage.removeItem(KEY),
  };
}
