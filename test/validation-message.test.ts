import { describe, expect, it } from 'vitest';
import { malformedJsonMessage, validationMessage } from '../client/gateway/validation-message';

describe('a 400 in words', () => {
  it('a union of literals is said once, with what it accepts', () => {
    const errors = ['worktree', 'local', 'ssh'].map((v) => ({
      keyword: 'const',
      instancePath: '/executorType',
      params: { allowedValue: v },
    }));
    errors.push({ keyword: 'anyOf', instancePath: '/executorType', params: {} as any });
    expect(validationMessage(errors, 'body')).toBe(
      'executorType must be one of worktree, local, ssh: the executors this service runs (no other is available here).',
    );
    const modes = ['shared', 'own'].map((v) => ({
      keyword: 'const',
      instancePath: '/mode',
      params: { allowedValue: v },
    }));
    expect(validationMessage(modes, 'body')).toBe('mode must be one of shared, own.');
  });
  it('names nested fields, limits and missing ones', () => {
    expect(
      validationMessage(
        [{ keyword: 'minLength', instancePath: '/repositories/0/baseBranch', params: { limit: 1 } }],
        'body',
      ),
    ).toBe('repositories[0].baseBranch must have at least 1 character.');
    expect(
      validationMessage([{ keyword: 'required', instancePath: '', params: { missingProperty: 'title' } }], 'body'),
    ).toBe('title is required.');
    expect(validationMessage([{ keyword: 'type', instancePath: '/args', params: { type: 'array' } }], 'body')).toBe(
      'args must be an array.',
    );
  });
  it('an unknown field gets the nearest known one, and a field name that is not plain is not repeated', () => {
    const parentSchema = { properties: { title: {}, repositories: {}, boardId: {} } };
    const unknown = (name: string) =>
      validationMessage(
        [{ keyword: 'additionalProperties', instancePath: '', params: { additionalProperty: name }, parentSchema }],
        'body',
      );
    expect(unknown('repos')).toBe('repos is not a field of this request; did you mean repositories?');
    expect(unknown('titel')).toBe('titel is not a field of this request; did you mean title?');
    expect(unknown('zzzzzzzz')).toBe('zzzzzzzz is not a field of this request.');
    expect(unknown('/etc/passwd')).toBe('the body has a field it does not take.');
  });
  it('a malformed body says where, never what', () => {
    expect(malformedJsonMessage("Expected ',' or '}' after property value in JSON at position 12")).toBe(
      'The body is not valid JSON: it breaks at character 13.',
    );
    expect(malformedJsonMessage('Unexpected end of JSON input')).toBe('The body is not valid JSON: it ends too early.');
    expect(malformedJsonMessage(`Unexpected token 's', "/secret/path" is not valid JSON`)).toBe(
      'The body is not valid JSON.',
    );
  });
});
